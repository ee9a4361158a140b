//! Starting sett-server for a test: on loopback, on a port the server binds
//! itself (`--port 0`, read back from its first line), watching the test process
//! (it shuts down by itself if the test dies) and stopped by pid.

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
    /// Starts a server on `dir` with `extra` arguments and waits until it listens:
    /// it binds a port the kernel picks, and prints it on its first line.
    pub fn start(dir: &Path, extra: &[&str]) -> Server {
        Server::start_on(dir, 0, extra)
    }

    /// As [`Server::start`], on `port`: a node restarted where its peers
    /// (Sentinel, other nodes) know it, on the port it bound the first time.
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

    /// SIGKILL by pid, then reaps it: a crash, nothing flushed or closed.
    pub fn kill9(&mut self) {
        let ok = Command::new("kill")
            .args(["-KILL", &self.child.id().to_string()])
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "kill -KILL {} failed", self.child.id());
        let _ = self.child.wait();
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

/// Sends `bytes` and reads until the server closes the connection; fails the
/// test if it is still open after 10 s.
pub fn send_and_read_all(s: &mut TcpStream, bytes: &[u8]) -> Vec<u8> {
    s.write_all(bytes).expect("raw write");
    let mut out = Vec::new();
    // A reset is a close too (the server closed with our request unread).
    if let Err(e) = s.read_to_end(&mut out).or_else(|e| {
        if e.kind() == std::io::ErrorKind::ConnectionReset {
            Ok(0)
        } else {
            Err(e)
        }
    }) {
        panic!(
            "the server did not close the connection ({e}); it sent {:?}",
            String::from_utf8_lossy(&out)
        );
    }
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

/// True if `tool` is on PATH, installing Debian's `package` first if it is not.
pub fn ensure_tool(tool: &str, package: &str) -> bool {
    let found = || {
        Command::new("sh")
            .args(["-c", &format!("command -v {tool}")])
            .stdout(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    if found() {
        return true;
    }
    // The tests of one binary run in parallel: one install at a time here, and
    // apt waits for dpkg's lock if another process holds it, so that a test
    // never reads a lost race for the lock as "cannot be installed".
    static INSTALL: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one = INSTALL.lock().unwrap_or_else(|p| p.into_inner());
    if found() {
        return true;
    }
    eprintln!("{tool} not found: installing Debian's {package}");
    let _ = Command::new("sh")
        .args([
            "-c",
            &format!(
                "apt-get -o DPkg::Lock::Timeout=300 update -q && DEBIAN_FRONTEND=noninteractive \
                 apt-get -o DPkg::Lock::Timeout=300 install -y -q {package}"
            ),
        ])
        .stdout(Stdio::null())
        .status();
    found()
}

/// Records a skipped test where `make test` counts them (cargo shows a skip as a
/// pass): the mark `server-<test>`.
pub fn skip(test: &str, reason: &str) {
    sett_test_skip::skip(&format!("server-{test}"), reason);
}

/// A helper program (nutcracker) started for a test: a shell watchdog stops it
/// by pid if the test process dies, and Drop stops it by pid.
pub struct Helper {
    pub child: Child,
    watchdog: Option<Child>,
}

impl Helper {
    pub fn spawn(cmd: &mut Command) -> Helper {
        let child = cmd
            .stdout(Stdio::null())
            .spawn()
            .expect("spawning a helper");
        let script = format!(
            "while kill -0 {parent} 2>/dev/null && kill -0 {child} 2>/dev/null; do sleep 0.5; done; kill {child} 2>/dev/null",
            parent = std::process::id(),
            child = child.id()
        );
        let watchdog = Command::new("sh").args(["-c", &script]).spawn().ok();
        Helper { child, watchdog }
    }
}

impl Drop for Helper {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if let Some(w) = &mut self.watchdog {
            let _ = w.wait();
        }
    }
}

/// Waits until something accepts connections on the Unix socket `path` (at most 10 s).
pub fn wait_listening(path: &Path) -> bool {
    let start = std::time::Instant::now();
    while start.elapsed() < Duration::from_secs(10) {
        if std::os::unix::net::UnixStream::connect(path).is_ok() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

/// A virtualenv with redis-py under target/tmp, made once.
pub fn redis_py() -> Option<PathBuf> {
    let venv = Path::new(env!("CARGO_TARGET_TMPDIR")).join("server-venv");
    let python = venv.join("bin/python");
    let have = |p: &Path| {
        Command::new(p)
            .args(["-c", "import redis.cluster, redis.sentinel"])
            .status()
            .is_ok_and(|s| s.success())
    };
    if have(&python) {
        return Some(python);
    }
    let made = Command::new("python3")
        .arg("-m")
        .arg("venv")
        .arg(&venv)
        .status()
        .is_ok_and(|s| s.success())
        && Command::new(venv.join("bin/pip"))
            .args(["install", "-q", "redis==8.1.0"])
            .status()
            .is_ok_and(|s| s.success());
    (made && have(&python)).then_some(python)
}

/// redis-py's virtualenv, or None after reporting the skip `<test>-no_venv`.
pub fn python_or_skip(test: &str) -> Option<PathBuf> {
    let python = redis_py();
    if python.is_none() {
        skip(
            &format!("{test}-no_venv"),
            "could not make a virtualenv with redis-py (python3 -m venv, pip)",
        );
    }
    python
}

/// `go run -race .` in tests/goredis, or None after reporting the skip `<test>-no_go`.
pub fn go_or_skip(test: &str) -> Option<Command> {
    let has_go = Command::new("go")
        .arg("version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !has_go {
        skip(&format!("{test}-no_go"), "go is not installed");
        return None;
    }
    // -race: the program's own goroutines are checked too.
    let mut cmd = Command::new("go");
    cmd.args(["run", "-race", "."])
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/goredis"));
    Some(cmd)
}

/// Debian's redis-sentinel (installed if missing), or false after reporting
/// the skip `<test>-no_redis_sentinel`.
pub fn sentinel_or_skip(test: &str) -> bool {
    let have = ensure_tool("redis-sentinel", "redis-sentinel");
    if !have {
        skip(
            &format!("{test}-no_redis_sentinel"),
            "redis-sentinel is not installed and apt-get could not install it",
        );
    }
    have
}
