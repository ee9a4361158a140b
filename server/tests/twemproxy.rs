//! The sharding recipe of examples/twemproxy: three sett-server nodes behind
//! Debian's nutcracker (twemproxy), all on loopback, driven through the proxy.
//!
//! The nodes bind ports of their own choosing (`--port 0`). nutcracker refuses
//! port 0 for its listener and its stats port (nc_valid_port wants 1-65535), so
//! both listen on Unix sockets in the test's folder instead: nothing is bound to
//! a TCP port the test picked.

mod common;

use common::{ensure_tool, skip, wait_listening, Helper, Server};
use redis::{cmd, Connection};
use std::path::Path;
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

/// nutcracker with the example's configuration, the nodes' ports, and its listener
/// and stats on Unix sockets under `dir` (`run` keeps the files of each start apart).
fn start_proxy(dir: &Path, nodes: &[Server], run: u32) -> (Helper, Connection) {
    let listen = dir.join(format!("proxy{run}.sock"));
    let stats = dir.join(format!("stats{run}.sock"));
    let mut conf = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/examples/twemproxy/nutcracker.yml"
    ))
    .expect("reading the example configuration")
    .replace(
        "listen: 127.0.0.1:22121",
        &format!("listen: {} 0600", listen.display()),
    );
    for (i, node) in nodes.iter().enumerate() {
        conf = conf.replace(
            &format!("127.0.0.1:700{}:", i + 1),
            &format!("127.0.0.1:{}:", node.port),
        );
    }
    assert!(
        conf.contains(&format!("127.0.0.1:{}:1 sett3", nodes[2].port)),
        "{conf}"
    );
    let conf_path = dir.join(format!("nutcracker{run}.yml"));
    std::fs::write(&conf_path, conf).expect("writing the configuration");
    // With -a naming a path, nutcracker binds its stats listener to that Unix socket
    // (-s is then unused, but it must be a valid port).
    let helper = Helper::spawn(
        Command::new("nutcracker")
            .arg("-c")
            .arg(&conf_path)
            .args(["-s", "22222", "-a"])
            .arg(&stats)
            .arg("-o")
            .arg(dir.join(format!("nutcracker{run}.log"))),
    );
    assert!(
        wait_listening(&listen),
        "nutcracker did not listen on {}",
        listen.display()
    );
    assert!(
        stats.exists(),
        "nutcracker's stats are not on {}",
        stats.display()
    );
    let proxy = redis::Client::open(format!("redis+unix://{}", listen.display()))
        .and_then(|c| c.get_connection())
        .expect("connecting to the proxy");
    (helper, proxy)
}

#[test]
fn twemproxy_spreads_keys_over_three_nodes_and_a_restarted_node_keeps_its_keys() {
    if !ensure_tool("nutcracker", "nutcracker") {
        skip(
            "twemproxy-no_nutcracker",
            "nutcracker is not installed and apt-get could not install it",
        );
        return;
    }
    let tmp = tempfile::tempdir().expect("tempdir");
    let mut nodes: Vec<Server> = (0..3)
        .map(|i| {
            let dir = tmp.path().join(format!("sett{}", i + 1));
            Server::start(&dir, &["--appendfsync", "always"])
        })
        .collect();
    let (mut _proxy, mut proxy) = start_proxy(tmp.path(), &nodes, 1);

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

    // Restart node 2 (SIGTERM, same directory): it comes back on another port,
    // and a proxy with the new address under the same name sends its keys there.
    let before = sizes[1];
    assert!(nodes[1].terminate(), "node 2 did not shut down cleanly");
    let dir = nodes[1].dir.clone();
    nodes[1] = Server::start(&dir, &["--appendfsync", "always"]);
    assert_eq!(
        dbsize(&mut nodes[1].client()),
        before,
        "node 2 lost keys over its restart"
    );
    drop(proxy);
    drop(_proxy);
    (_proxy, proxy) = start_proxy(tmp.path(), &nodes, 2);
    for i in 0..N {
        assert_eq!(
            get_retrying(&mut proxy, &format!("key:{i}")),
            Some(format!("value:{i}"))
        );
    }
}
