//! Starting sett-server for a test: on loopback, on a free port, watching the
//! test process (it shuts down by itself if the test dies) and stopped by pid.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

pub struct Server {
    pub child: Child,
    pub port: u16,
    pub dir: PathBuf,
}

pub const BIN: &str = env!("CARGO_BIN_EXE_sett-server");

impl Server {
    /// Starts a server on `dir` with `extra` arguments and waits until it listens.
    pub fn start(dir: &Path, extra: &[&str]) -> Server {
        Self::start_on(dir, 0, extra)
    }

    pub fn start_on(dir: &Path, port: u16, extra: &[&str]) -> Server {
        let mut child = Command::new(BIN)
            .arg("--dir")
            .arg(dir)
            .args(["--bind", "127.0.0.1", "--port", &port.to_string()])
            .args(["--parent-pid", &std::process::id().to_string()])
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawning sett-server");
        let stdout = child.stdout.take().expect("sett-server stdout");
        let mut line = String::new();
        BufReader::new(stdout)
            .read_line(&mut line)
            .expect("reading the listening line");
        let port = line
            .trim()
            .rsplit(':')
            .next()
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("sett-server did not start: {line:?}"));
        Server {
            child,
            port,
            dir: dir.to_path_buf(),
        }
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    pub fn client(&self) -> redis::Connection {
        redis::Client::open(self.url())
            .and_then(|c| c.get_connection_with_timeout(Duration::from_secs(10)))
            .expect("connecting to sett-server")
    }

    pub fn raw(&self) -> TcpStream {
        let s = TcpStream::connect(("127.0.0.1", self.port)).expect("raw connect");
        s.set_read_timeout(Some(Duration::from_secs(10)))
            .expect("read timeout");
        s
    }

    /// SIGTERM by pid; returns whether it exited successfully within 20 s.
    pub fn terminate(&mut self) -> bool {
        let ok = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "kill -TERM {} failed", self.child.id());
        for _ in 0..200 {
            if let Ok(Some(status)) = self.child.try_wait() {
                return status.success();
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        false
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Sends `bytes` and reads until the server closes the connection (or 10 s pass).
pub fn send_and_read_all(s: &mut TcpStream, bytes: &[u8]) -> Vec<u8> {
    s.write_all(bytes).expect("raw write");
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    out
}

/// Reads what arrives within `wait` (for replies on a connection that stays open).
pub fn read_for(s: &mut TcpStream, wait: Duration) -> Vec<u8> {
    s.set_read_timeout(Some(wait)).expect("read timeout");
    let mut out = Vec::new();
    let mut buf = [0u8; 65536];
    while let Ok(n) = s.read(&mut buf) {
        if n == 0 {
            break;
        }
        out.extend_from_slice(&buf[..n]);
    }
    out
}
