//! The sharding recipe of examples/twemproxy: three sett-server nodes behind
//! Debian's nutcracker (twemproxy), all on loopback, driven through the proxy.

mod common;

use common::{ensure_tool, free_port, skip, wait_listening, Helper, Server};
use redis::{cmd, Connection};
use std::process::Command;
use std::time::{Duration, Instant};

fn dbsize(c: &mut Connection) -> i64 {
    cmd("DBSIZE").query(c).expect("dbsize")
}

/// Retries a read through the proxy until it succeeds (a restarted node is
/// reconnected after server_retry_timeout) or 10 s pass.
fn get_retrying(proxy: &mut Connection, key: &str) -> Option<String> {
    let start = Instant::now();
    loop {
        match cmd("GET").arg(key).query::<Option<String>>(proxy) {
            Ok(v) => return v,
            Err(e) if start.elapsed() < Duration::from_secs(10) => {
                let _ = e;
                std::thread::sleep(Duration::from_millis(100));
            }
            Err(e) => panic!("GET {key} through the proxy: {e}"),
        }
    }
}

#[test]
fn twemproxy_spreads_keys_over_three_nodes_and_a_restarted_node_keeps_its_keys() {
    if !ensure_tool("nutcracker", "nutcracker") {
        skip(
            "twemproxy",
            "nutcracker is not installed and apt-get could not install it",
        );
        return;
    }
    let tmp = tempfile::tempdir().expect("tempdir");
    let ports: Vec<u16> = (0..3).map(|_| free_port()).collect();
    let mut nodes: Vec<Server> = (0..3)
        .map(|i| {
            let dir = tmp.path().join(format!("sett{}", i + 1));
            Server::start_on(&dir, ports[i], &["--appendfsync", "always"])
        })
        .collect();
    // The example's configuration with this test's ports.
    let (proxy_port, stats_port) = (free_port(), free_port());
    let conf = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/examples/twemproxy/nutcracker.yml"
    ))
    .expect("reading the example configuration")
    .replace("127.0.0.1:22121", &format!("127.0.0.1:{proxy_port}"))
    .replace("127.0.0.1:7001:", &format!("127.0.0.1:{}:", ports[0]))
    .replace("127.0.0.1:7002:", &format!("127.0.0.1:{}:", ports[1]))
    .replace("127.0.0.1:7003:", &format!("127.0.0.1:{}:", ports[2]));
    let conf_path = tmp.path().join("nutcracker.yml");
    std::fs::write(&conf_path, conf).expect("writing the configuration");
    let _proxy = Helper::spawn(
        Command::new("nutcracker")
            .arg("-c")
            .arg(&conf_path)
            .args(["-s", &stats_port.to_string(), "-a", "127.0.0.1"])
            .arg("-o")
            .arg(tmp.path().join("nutcracker.log")),
    );
    assert!(
        wait_listening(proxy_port),
        "nutcracker did not listen on {proxy_port}"
    );
    let mut proxy = redis::Client::open(format!("redis://127.0.0.1:{proxy_port}/"))
        .and_then(|c| c.get_connection())
        .expect("connecting to the proxy");

    const N: usize = 600;
    for i in 0..N {
        let _: () = cmd("SET")
            .arg(format!("key:{i}"))
            .arg(format!("value:{i}"))
            .query(&mut proxy)
            .expect("set");
    }
    for field in ["name", "mail", "city"] {
        let _: () = cmd("SET")
            .arg(format!("{{user42}}:{field}"))
            .arg(field)
            .query(&mut proxy)
            .expect("set tagged");
    }
    // Spread: every node holds a fair share; together they hold each key once.
    let sizes: Vec<i64> = nodes.iter().map(|n| dbsize(&mut n.client())).collect();
    assert_eq!(sizes.iter().sum::<i64>(), N as i64 + 3, "sizes {sizes:?}");
    for (i, &s) in sizes.iter().enumerate() {
        assert!(
            s > N as i64 / 10,
            "node {i} holds only {s} of {N} keys: {sizes:?}"
        );
    }
    // Hash tags: the three {user42} keys are on one node.
    let holders: Vec<usize> = (0..3)
        .filter(|&i| {
            let mut c = nodes[i].client();
            cmd("EXISTS")
                .arg("{user42}:name")
                .arg("{user42}:mail")
                .arg("{user42}:city")
                .query::<i64>(&mut c)
                .ok()
                == Some(3)
        })
        .collect();
    assert_eq!(
        holders.len(),
        1,
        "the {{user42}} keys are not together on one node"
    );
    // Everything reads back through the proxy, MGET across nodes included.
    for i in 0..N {
        assert_eq!(
            get_retrying(&mut proxy, &format!("key:{i}")),
            Some(format!("value:{i}"))
        );
    }
    let many: Vec<Option<String>> = cmd("MGET")
        .arg("key:1")
        .arg("key:2")
        .arg("key:3")
        .arg("nope")
        .query(&mut proxy)
        .expect("mget");
    assert_eq!(
        many,
        vec![
            Some("value:1".into()),
            Some("value:2".into()),
            Some("value:3".into()),
            None
        ]
    );

    // Restart node 2 (SIGTERM, same directory and port): its keys are still served.
    let before = sizes[1];
    assert!(nodes[1].terminate(), "node 2 did not shut down cleanly");
    let dir = nodes[1].dir.clone();
    nodes[1] = Server::start_on(&dir, ports[1], &["--appendfsync", "always"]);
    assert_eq!(
        dbsize(&mut nodes[1].client()),
        before,
        "node 2 lost keys over its restart"
    );
    for i in 0..N {
        assert_eq!(
            get_retrying(&mut proxy, &format!("key:{i}")),
            Some(format!("value:{i}"))
        );
    }
}
