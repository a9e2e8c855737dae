//! `jr2-fake-provider [PORT]`: the fake OpenAI-compatible provider as a process, for benchmarks and for a real
//! gateway (LiteLLM) to sit in front of. Prints `listening on http://127.0.0.1:<port>/v1` and serves until killed.

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let port = std::env::args()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    let fake = jr2_testkit::fake_provider::FakeProvider::start_on(port)
        .await
        .expect("bind 127.0.0.1");
    println!("listening on {}", fake.base_url());
    let _ = tokio::signal::ctrl_c().await;
}
