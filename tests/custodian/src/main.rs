//! `jr2-test-custodian`: the Custodian of jr2's Harness pods, as far as the real-cluster tests need one, in a static
//! binary with no dependencies (it runs `FROM scratch` in the check pod as a native sidecar, as jr2's Envoy does).
//!
//! - A proxy on `--listen` (default `127.0.0.1:15001`): CONNECT, and absolute-form `http://` requests. Inside a
//!   CONNECT tunnel to a plain-HTTP origin, and in an absolute-form request, each header value that carries a
//!   Stand-in `jr2-held-<NAME>` gets the held value of `<NAME>` (the file `<NAME>` of `--values`, as the Custodian's
//!   projected Secret volume mounts them) in its place; a Stand-in with no held value is answered with the
//!   Custodian's `403 jr2 custodian: ...`. A TLS tunnel is relayed as it is.
//! - A health endpoint on `--health` (default `0.0.0.0:15021`, `GET /healthz`) for the readiness and startup probes;
//!   `--never-ready` answers 503 forever (a Custodian whose startup probe never passes).
//! - `--allocate-mib N`: N MiB touched at start and held (a Custodian over its memory limit).
//! - `--dial ADDR`: no proxy; a Harness-like pod's dialer instead (issue 35): a TCP connect to ADDR every 250 ms from
//!   the container's start, each written as a line `dial <ms since start> ok` or `dial <ms> <error>`, forever: what
//!   a Turn's connection to the provider meets under the namespace's NetworkPolicies, and from when.
//!
//! - `--forward ADDR`: no proxy; a provider that runs in the cluster instead (issue 35): each connection on `--listen`
//!   relayed as it is to ADDR (the fake provider on the node's address), so that a pod serves the provider at its own
//!   address, behind the Ingress policies that select it.
//!
//! Every read is bounded (a request head of at most 64 KiB) and every connection has a 60 s idle deadline.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::time::Duration;

const MAX_HEAD: usize = 64 * 1024;
const IDLE: Duration = Duration::from_secs(60);

struct Config {
    listen: String,
    health: String,
    values: PathBuf,
    never_ready: bool,
    allocate_mib: usize,
}

/// `--dial ADDR`: connects every 250 ms (each within 2 s), forever; one line per attempt.
fn dial(addr: &str) -> ! {
    let start = std::time::Instant::now();
    let Ok(target) = addr.parse::<std::net::SocketAddr>() else {
        die(&format!("--dial {addr:?}: not an address:port"))
    };
    loop {
        let at = start.elapsed().as_millis();
        let outcome = match TcpStream::connect_timeout(&target, Duration::from_secs(2)) {
            Ok(_) => "ok".to_owned(),
            Err(e) => e.to_string(),
        };
        println!("dial {at} {outcome}");
        let _ = std::io::stdout().flush();
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// `--forward ADDR`: relays each connection on `listen` to ADDR, forever.
fn serve_forward(listen: &str, addr: &str) -> ! {
    let Ok(target) = addr.parse::<std::net::SocketAddr>() else {
        die(&format!("--forward {addr:?}: not an address:port"))
    };
    let listener =
        TcpListener::bind(listen).unwrap_or_else(|e| die(&format!("bind {listen}: {e}")));
    eprintln!("jr2-test-custodian: forwarding {listen} to {addr}");
    for conn in listener.incoming().flatten() {
        std::thread::spawn(move || {
            let _ = conn.set_read_timeout(Some(IDLE));
            match TcpStream::connect_timeout(&target, Duration::from_secs(5)) {
                Ok(up) => {
                    if let Ok(c) = conn.try_clone() {
                        let _ = relay(BufReader::new(c), conn, up);
                    }
                }
                Err(e) => eprintln!("jr2-test-custodian: connect {target}: {e}"),
            }
        });
    }
    die("the listener closed")
}

fn main() {
    let mut cfg = Config {
        listen: "127.0.0.1:15001".into(),
        health: "0.0.0.0:15021".into(),
        values: PathBuf::from("/etc/jr2/custodian/values"),
        never_ready: false,
        allocate_mib: 0,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--listen" => cfg.listen = args.next().unwrap_or_default(),
            "--health" => cfg.health = args.next().unwrap_or_default(),
            "--values" => cfg.values = PathBuf::from(args.next().unwrap_or_default()),
            "--never-ready" => cfg.never_ready = true,
            "--dial" => dial(&args.next().unwrap_or_default()),
            "--forward" => serve_forward(&cfg.listen, &args.next().unwrap_or_default()),
            "--allocate-mib" => {
                cfg.allocate_mib = args.next().and_then(|n| n.parse().ok()).unwrap_or(0)
            }
            other => {
                eprintln!("jr2-test-custodian: unknown argument {other:?}");
                std::process::exit(2);
            }
        }
    }
    // `--allocate-mib N`: touch N MiB at start (a Custodian over its memory limit, for the OOM test).
    let mut ballast: Vec<Vec<u8>> = Vec::new();
    for _ in 0..cfg.allocate_mib {
        ballast.push(vec![1u8; 1 << 20]);
    }
    let health = TcpListener::bind(&cfg.health)
        .unwrap_or_else(|e| die(&format!("bind {}: {e}", cfg.health)));
    let never_ready = cfg.never_ready;
    std::thread::spawn(move || {
        for conn in health.incoming().flatten() {
            std::thread::spawn(move || serve_health(conn, never_ready));
        }
    });
    let proxy = TcpListener::bind(&cfg.listen)
        .unwrap_or_else(|e| die(&format!("bind {}: {e}", cfg.listen)));
    eprintln!(
        "jr2-test-custodian: proxy on {}, health on {}",
        cfg.listen, cfg.health
    );
    let values = std::sync::Arc::new(cfg.values);
    std::hint::black_box(&ballast);
    for conn in proxy.incoming().flatten() {
        let values = values.clone();
        std::thread::spawn(move || {
            if let Err(e) = serve_proxy(conn, &values) {
                eprintln!("jr2-test-custodian: {e}");
            }
        });
    }
}

fn die(msg: &str) -> ! {
    eprintln!("jr2-test-custodian: error: {msg}");
    std::process::exit(1)
}

fn serve_health(mut conn: TcpStream, never_ready: bool) {
    let _ = conn.set_read_timeout(Some(IDLE));
    let mut reader = BufReader::new(conn.try_clone().expect("clone"));
    if read_head(&mut reader).is_err() {
        return;
    }
    let (status, body) = if never_ready {
        ("503 Service Unavailable", "starting\n")
    } else {
        ("200 OK", "ok\n")
    };
    let _ = write!(
        conn,
        "HTTP/1.1 {status}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
}

/// One request head: the request line and the header lines, without the empty line.
fn read_head(reader: &mut impl BufRead) -> std::io::Result<Vec<String>> {
    let mut lines = Vec::new();
    let mut total = 0;
    loop {
        let mut line = Vec::new();
        let n = reader
            .by_ref()
            .take((MAX_HEAD - total) as u64 + 1)
            .read_until(b'\n', &mut line)?;
        if n == 0 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "the connection closed in a request head",
            ));
        }
        total += n;
        if total > MAX_HEAD {
            return Err(std::io::Error::other("a request head over 64 KiB"));
        }
        let text = String::from_utf8_lossy(&line)
            .trim_end_matches(['\r', '\n'])
            .to_owned();
        if text.is_empty() {
            return Ok(lines);
        }
        lines.push(text);
    }
}

fn serve_proxy(client: TcpStream, values: &Path) -> std::io::Result<()> {
    client.set_read_timeout(Some(IDLE))?;
    let mut reader = BufReader::new(client.try_clone()?);
    let head = read_head(&mut reader)?;
    let request_line = head.first().cloned().unwrap_or_default();
    let mut parts = request_line.split(' ');
    let (method, target) = (
        parts.next().unwrap_or_default(),
        parts.next().unwrap_or_default().to_owned(),
    );
    let mut client_w = client.try_clone()?;
    if method == "CONNECT" {
        let upstream = match TcpStream::connect(&target) {
            Ok(s) => s,
            Err(e) => {
                return refuse(
                    &mut client_w,
                    "502 Bad Gateway",
                    &format!("{target} could not be reached: {e}"),
                );
            }
        };
        client_w.write_all(b"HTTP/1.1 200 Connection Established\r\n\r\n")?;
        // What the tunnel carries: TLS is relayed as it is; plain HTTP gets its Stand-ins swapped.
        let first = reader.fill_buf()?.first().copied();
        if first == Some(0x16) {
            return relay(reader, client_w, upstream);
        }
        let inner = read_head(&mut reader)?;
        return forward(inner, reader, client_w, upstream, values, None);
    }
    let Some(rest) = target.strip_prefix("http://") else {
        return refuse(
            &mut client_w,
            "400 Bad Request",
            "only CONNECT and http:// requests",
        );
    };
    let (authority, path) = rest
        .split_once('/')
        .map_or((rest, "/".to_owned()), |(a, p)| (a, format!("/{p}")));
    let addr = if authority.contains(':') {
        authority.to_owned()
    } else {
        format!("{authority}:80")
    };
    let upstream = match TcpStream::connect(&addr) {
        Ok(s) => s,
        Err(e) => {
            return refuse(
                &mut client_w,
                "502 Bad Gateway",
                &format!("{addr} could not be reached: {e}"),
            );
        }
    };
    let version = parts.next().unwrap_or("HTTP/1.1");
    let line = format!("{method} {path} {version}");
    forward(head, reader, client_w, upstream, values, Some(line))
}

/// Sends a request head with its Stand-ins swapped, then relays both ways.
fn forward(
    mut head: Vec<String>,
    reader: BufReader<TcpStream>,
    mut client: TcpStream,
    mut upstream: TcpStream,
    values: &Path,
    request_line: Option<String>,
) -> std::io::Result<()> {
    if let Some(line) = request_line {
        head[0] = line;
    }
    for header in head.iter_mut().skip(1) {
        let Some(at) = header.find("jr2-held-") else {
            continue;
        };
        let name: String = header[at + "jr2-held-".len()..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        let held = std::fs::read_to_string(values.join(&name))
            .ok()
            .map(|v| v.trim_end_matches(['\r', '\n']).to_owned());
        let Some(held) = held.filter(|_| !name.is_empty() && !name.contains('/')) else {
            return refuse(
                &mut client,
                "403 Forbidden",
                &format!("no held value for the stand-in of {name}"),
            );
        };
        *header = header.replacen(&format!("jr2-held-{name}"), &held, 1);
    }
    let mut out = head.join("\r\n");
    out.push_str("\r\n\r\n");
    upstream.write_all(out.as_bytes())?;
    relay(reader, client, upstream)
}

/// Relays bytes both ways until either side closes.
fn relay(
    mut reader: BufReader<TcpStream>,
    mut client: TcpStream,
    upstream: TcpStream,
) -> std::io::Result<()> {
    upstream.set_read_timeout(Some(IDLE))?;
    let mut up_r = upstream.try_clone()?;
    let mut up_w = upstream;
    let back = std::thread::spawn(move || {
        let _ = std::io::copy(&mut up_r, &mut client);
        let _ = client.shutdown(std::net::Shutdown::Write);
    });
    let buffered = reader.buffer().to_vec();
    up_w.write_all(&buffered)?;
    reader.consume(buffered.len());
    let _ = std::io::copy(&mut reader, &mut up_w);
    let _ = up_w.shutdown(std::net::Shutdown::Write);
    let _ = back.join();
    Ok(())
}

fn refuse(client: &mut TcpStream, status: &str, why: &str) -> std::io::Result<()> {
    let body = format!("jr2 custodian: {why}\n");
    write!(
        client,
        "HTTP/1.1 {status}\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
}
