//! Observe (RFC 7641) over loopback: `coapcc client --observe N` against `coapcc server`'s
//! `/counter`, whose CON notifications are exchanges under the server's congestion control.

use coapcc_net::{run_client, ClientArgs, Server, ServerArgs};
use serde_json::Value;

#[tokio::test]
async fn client_observes_the_counter() {
    let slog = std::env::temp_dir().join(format!("coapcc-observe-{}.jsonl", std::process::id()));
    let args =
        <ServerArgs as clap::Parser>::parse_from(["server", "--bind", "127.0.0.1:0", "--log", slog.to_str().unwrap()]);
    let mut server = Server::bind(&args).await.unwrap();
    let uri = format!("coap://{}/counter?period=100", server.local_addr());
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let client = async move {
        let a = <ClientArgs as clap::Parser>::parse_from(["client", &uri, "--observe", "3", "--timeout", "20"]);
        let mut log = Vec::new();
        let s = run_client(a, &mut log).await.unwrap();
        let _ = tx.send(());
        (s, String::from_utf8(log).unwrap())
    };
    let (stats, (s, log)) = tokio::join!(server.run_until(rx), client);
    stats.unwrap();
    assert_eq!((s.responses, s.notifications), (1, 3));
    let lines: Vec<Value> = log.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let seqs: Vec<u64> =
        lines.iter().filter(|l| l["type"] == "notification").map(|l| l["observe"].as_u64().unwrap()).collect();
    assert_eq!(seqs, [1, 2, 3]);
    assert_eq!(lines.last().unwrap()["notifications"], 3);
    // The notifications were CON exchanges timed by the server's algorithm, acknowledged.
    let server_log = std::fs::read_to_string(&slog).unwrap();
    let _ = std::fs::remove_file(&slog);
    let acked = server_log
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|l| l["type"] == "exchange" && l["outcome"] == "acknowledged" && l["algorithm"] == "default")
        .count();
    // (The third ACK may arrive after the server was told to stop.)
    assert!(acked >= 2, "{server_log}");
}
