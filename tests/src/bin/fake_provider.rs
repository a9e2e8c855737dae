//! `jr2-fake-provider [PORT]`: the fake OpenAI-compatible provider as a process, for benchmarks and for a real
//! gateway (LiteLLM) to sit in front of. Prints `listening on http://127.0.0.1:<port>/v1` and serves until killed.
//!
//! `jr2-fake-provider --bind ADDR:PORT`: for the network-namespace tests (`tests/netns/run.sh`), which run it inside a
//! namespace of their own: the fake serves on that namespace's loopback and every connection to `ADDR:PORT` (an
//! address of the namespace's own veth, or the test cluster's node) is relayed to it. Prints `listening on
//! http://ADDR:PORT/v1` (with the port chosen when PORT is 0).

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    // `--bind ADDR:PORT [--until-stdin-closes]`: the second flag ends it when its stdin closes (a test that started
    // it as a child exited, however it ended), besides Ctrl-C.
    if let [flag, addr, rest @ ..] = args.as_slice()
        && flag == "--bind"
    {
        let until_stdin_closes = rest.iter().any(|a| a == "--until-stdin-closes");
        let addr: std::net::SocketAddr = addr.parse().expect("--bind takes ADDR:PORT");
        let fake = jr2_testkit::provider::FakeProvider::start().await;
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .expect("bind the --bind address");
        // Port 0: the port the system chose.
        let addr = listener.local_addr().expect("the bound address");
        println!("listening on http://{addr}/v1");
        let upstream = fake.addr();
        tokio::spawn(async move {
            loop {
                let Ok((mut client, _)) = listener.accept().await else {
                    continue;
                };
                tokio::spawn(async move {
                    if let Ok(mut server) = tokio::net::TcpStream::connect(upstream).await {
                        let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
                    }
                });
            }
        });
        let stdin_closed = async {
            use tokio::io::AsyncReadExt;
            if !until_stdin_closes {
                std::future::pending::<()>().await;
            }
            let mut stdin = tokio::io::stdin();
            let mut buf = [0u8; 64];
            while let Ok(n) = stdin.read(&mut buf).await {
                if n == 0 {
                    break;
                }
            }
        };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = stdin_closed => {}
        }
        drop(fake);
        return;
    }
    let port = args.first().and_then(|p| p.parse().ok()).unwrap_or(0);
    let fake = jr2_testkit::provider::FakeProvider::start_on(port)
        .await
        .expect("bind 127.0.0.1");
    println!("listening on {}", fake.base_url());
    let _ = tokio::signal::ctrl_c().await;
}
