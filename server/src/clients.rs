//! The connected clients as other connections reach them: `CLIENT KILL`
//! ends a connection, and `PUBLISH` delivers a message to the connections
//! `SUBSCRIBE`d to its channel. Channels are exact names (no patterns, no
//! shard channels, and in cluster mode a message stays on its node): what
//! Redis Sentinel's `__sentinel__:hello` and simple notifications need.
//!
//! A subscriber's messages wait in a bounded queue that its connection loop
//! drains; a subscriber that lets [`INBOX`] messages pile up is disconnected,
//! as redis-server's output-buffer limit for pubsub clients does, so that a
//! publisher never waits on it.

use crate::resp::Reply;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::{mpsc, Notify};

/// Messages a subscriber may have waiting before it is disconnected.
pub const INBOX: usize = 4096;

/// What `CLIENT KILL TYPE` tells apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Normal,
    PubSub,
}

struct Client {
    addr: String,
    kill: Arc<Notify>,
    inbox: mpsc::Sender<Reply>,
    channels: HashSet<Vec<u8>>,
}

#[derive(Default)]
struct Inner {
    clients: HashMap<u64, Client>,
    channels: HashMap<Vec<u8>, HashSet<u64>>,
}

/// Every connection's kill switch and subscriptions; one per server.
#[derive(Default)]
pub struct Clients {
    inner: Mutex<Inner>,
}

impl std::fmt::Debug for Clients {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Clients")
            .field("connected", &self.lock().clients.len())
            .finish()
    }
}

/// What a connection loop keeps of its own entry.
pub struct Registration {
    /// Notified when another client kills this one.
    pub kill: Arc<Notify>,
    /// Messages for this connection's subscriptions.
    pub inbox: mpsc::Receiver<Reply>,
}

/// A filter of `CLIENT KILL`: every given field must match.
#[derive(Debug, Default)]
pub struct KillFilter {
    pub id: Option<u64>,
    pub kind: Option<Kind>,
    pub addr: Option<String>,
    /// Leave the caller alone (SKIPME, yes by default).
    pub skip: Option<u64>,
}

impl Clients {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Enters connection `id` (peer address `addr`); [`Clients::remove`] when it ends.
    pub fn register(&self, id: u64, addr: String) -> Registration {
        let (tx, rx) = mpsc::channel(INBOX);
        let kill = Arc::new(Notify::new());
        self.lock().clients.insert(
            id,
            Client {
                addr,
                kill: kill.clone(),
                inbox: tx,
                channels: HashSet::new(),
            },
        );
        Registration { kill, inbox: rx }
    }

    /// Forgets connection `id` and its subscriptions.
    pub fn remove(&self, id: u64) {
        let mut g = self.lock();
        let Inner { clients, channels } = &mut *g;
        if let Some(c) = clients.remove(&id) {
            for ch in c.channels {
                forget(channels, &ch, id);
            }
        }
    }

    /// Subscribes `id` to `channel`; returns how many channels it now has.
    pub fn subscribe(&self, id: u64, channel: &[u8]) -> usize {
        let mut g = self.lock();
        let Inner { clients, channels } = &mut *g;
        let Some(c) = clients.get_mut(&id) else {
            return 0;
        };
        if c.channels.insert(channel.to_vec()) {
            channels.entry(channel.to_vec()).or_default().insert(id);
        }
        c.channels.len()
    }

    /// Unsubscribes `id` from `channel`; returns how many channels it has left.
    pub fn unsubscribe(&self, id: u64, channel: &[u8]) -> usize {
        let mut g = self.lock();
        let Inner { clients, channels } = &mut *g;
        let Some(c) = clients.get_mut(&id) else {
            return 0;
        };
        if c.channels.remove(channel) {
            forget(channels, channel, id);
        }
        c.channels.len()
    }

    /// The channels `id` is subscribed to, sorted.
    pub fn channels_of(&self, id: u64) -> Vec<Vec<u8>> {
        let mut out: Vec<Vec<u8>> = self
            .lock()
            .clients
            .get(&id)
            .map(|c| c.channels.iter().cloned().collect())
            .unwrap_or_default();
        out.sort();
        out
    }

    /// Delivers `message` to every subscriber of `channel`; returns how many
    /// got it. A subscriber whose queue is full is disconnected instead.
    pub fn publish(&self, channel: &[u8], message: &[u8]) -> usize {
        let g = self.lock();
        let Some(ids) = g.channels.get(channel) else {
            return 0;
        };
        let mut delivered = 0;
        for id in ids {
            let Some(c) = g.clients.get(id) else {
                continue;
            };
            let push = Reply::Push(vec![
                Reply::text("message"),
                Reply::Bulk(channel.to_vec()),
                Reply::Bulk(message.to_vec()),
            ]);
            match c.inbox.try_send(push) {
                Ok(()) => delivered += 1,
                Err(mpsc::error::TrySendError::Full(_)) => c.kill.notify_one(),
                Err(mpsc::error::TrySendError::Closed(_)) => {}
            }
        }
        delivered
    }

    /// Ends every connection that `f` matches; returns how many.
    pub fn kill(&self, f: &KillFilter) -> usize {
        let g = self.lock();
        let mut n = 0;
        for (id, c) in &g.clients {
            let kind = if c.channels.is_empty() {
                Kind::Normal
            } else {
                Kind::PubSub
            };
            let matches = f.skip != Some(*id)
                && f.id.is_none_or(|want| want == *id)
                && f.kind.is_none_or(|want| want == kind)
                && f.addr.as_ref().is_none_or(|want| *want == c.addr);
            if matches {
                c.kill.notify_one();
                n += 1;
            }
        }
        n
    }
}

fn forget(channels: &mut HashMap<Vec<u8>, HashSet<u64>>, channel: &[u8], id: u64) {
    if let Some(ids) = channels.get_mut(channel) {
        ids.remove(&id);
        if ids.is_empty() {
            channels.remove(channel);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_reaches_the_subscribers_of_its_channel_only() {
        let c = Clients::default();
        let mut a = c.register(1, "127.0.0.1:1".into());
        let mut b = c.register(2, "127.0.0.1:2".into());
        assert_eq!(c.subscribe(1, b"x"), 1);
        assert_eq!(c.subscribe(1, b"x"), 1, "a second SUBSCRIBE adds nothing");
        assert_eq!(c.subscribe(2, b"y"), 1);
        assert_eq!(c.publish(b"x", b"hi"), 1);
        assert!(
            matches!(a.inbox.try_recv(), Ok(Reply::Push(p)) if p[2] == Reply::Bulk(b"hi".to_vec()))
        );
        assert!(b.inbox.try_recv().is_err());
        assert_eq!(c.unsubscribe(1, b"x"), 0);
        assert_eq!(c.publish(b"x", b"again"), 0);
        c.remove(2);
        assert_eq!(c.publish(b"y", b"gone"), 0);
    }

    #[test]
    fn a_subscriber_that_falls_behind_is_killed_and_the_publisher_goes_on() {
        let c = Clients::default();
        let r = c.register(1, "a".into());
        c.subscribe(1, b"x");
        for _ in 0..INBOX {
            assert_eq!(c.publish(b"x", b"m"), 1);
        }
        assert_eq!(c.publish(b"x", b"m"), 0, "the full queue took it");
        let killed = r.kill.notified();
        // notify_one stored a permit: the kill is seen even by a later wait.
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        rt.block_on(async {
            tokio::time::timeout(std::time::Duration::from_secs(1), killed)
                .await
                .expect("the slow subscriber was not killed")
        });
    }

    #[test]
    fn kill_by_type_spares_the_caller_and_tells_subscribers_apart() {
        let c = Clients::default();
        let _me = c.register(1, "a".into());
        let _plain = c.register(2, "b".into());
        let _sub = c.register(3, "c".into());
        c.subscribe(3, b"ch");
        let normal = KillFilter {
            kind: Some(Kind::Normal),
            skip: Some(1),
            ..KillFilter::default()
        };
        assert_eq!(c.kill(&normal), 1);
        let pubsub = KillFilter {
            kind: Some(Kind::PubSub),
            ..KillFilter::default()
        };
        assert_eq!(c.kill(&pubsub), 1);
        let by_addr = KillFilter {
            addr: Some("b".into()),
            ..KillFilter::default()
        };
        assert_eq!(c.kill(&by_addr), 1);
    }
}
