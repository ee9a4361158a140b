//! The change feed: committed writes delivered to subscribers in version order
//! (Badger's `Subscribe`).
//!
//! **Capture.** A write group's leader asks [`Feed::collector`] once per group,
//! under the log lock: one relaxed atomic load. While nothing listens it gets
//! `None` and the group costs nothing more (no lock, no allocation). While it
//! listens, the leader copies each op (key, value, user meta, expiry) before the
//! op is consumed, and after the group is visible, still under the log lock,
//! hands the copies to [`Feed::publish`]. Groups are committed and made visible
//! one at a time under that lock, so the feed sees them in version order, each
//! after it became visible, and never one twice.
//!
//! **Writer bound.** A write never waits on a subscriber. Publishing takes the
//! hub lock and, per subscriber, that subscriber's lock; a subscriber holds its
//! lock only to swap its queue out (O(1)), never while it sleeps or processes.
//! A subscriber whose queue would pass its `max_pending_bytes` loses its queue
//! and is marked behind: its next `next()` fails with
//! [`Error::FellBehind`] carrying the version to resume from.
//!
//! **History.** The hub keeps the most recent changes (all keys, up to
//! [`Options::change_feed_history_bytes`](crate::Options)) so that a subscriber
//! can start `from` a version: the one it fell behind at, or one it persisted.
//! Capture, and so the history, starts with the first subscription and then
//! goes on for the life of the Db handle (if the history size is not 0): a
//! subscriber that fell behind drops its subscription and resubscribes, and the
//! writes made in between must be in the history. A Db that never subscribes
//! pays nothing. The history holds every change with a version above its
//! `floor`; `from` below it fails with [`Error::FeedHistoryTooShort`]. It lives
//! in memory only: after a reopen it starts empty at the first subscription.
//!
//! A range delete (`delete_range`, `drop_prefix`) is one versioned write,
//! delivered as one [`ChangeKind::DeleteRange`] change.
//!
//! **Not delivered one by one**: a bulk load and `drop_all` change keys
//! without versioned writes. They end every live subscription with
//! [`Error::FellBehind`] and move the history's floor past them, so that
//! resuming fails with [`Error::FeedHistoryTooShort`] and the subscriber
//! rescans (the recipe on [`crate::Db::subscribe`]). Value-log GC moves keep
//! their key's version and value and are not changes. A restore ([`crate::Db::load`])
//! writes batches and is delivered like any write.

use crate::batch::{BatchOp, OpValue};

/// An op of a batch and the batch's buffer its spans point into.
pub(crate) type OpOf<'a> = (&'a BatchOp, &'a [u8]);
use crate::error::{Error, Result};
use crate::sync::lock;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// What a [`Change`] did to its key. New kinds of write (a range delete, say)
/// get a new variant, so matches on it need a wildcard arm.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeKind {
    /// The key was set to [`Change::value`].
    Put,
    /// The key was deleted ([`Change::value`] is empty).
    Delete,
    /// Every key in `[key, value)` was deleted by one range delete
    /// ([`crate::Db::delete_range`], `drop_prefix`): [`Change::key`] is the
    /// range's start, [`Change::value`] its end (empty: no upper bound). A
    /// subscriber to prefixes gets it when the range meets one of them, with
    /// the whole range: keys in it outside its prefixes are not its concern.
    DeleteRange,
    /// A merge operand was written to the key ([`crate::Db::merge`]):
    /// [`Change::value`] is the operand, not the key's new value. A
    /// subscriber that needs the value reads the key at
    /// [`Change::version`], or folds the operands itself.
    Merge,
}

/// One committed write, as delivered by a [`Subscription`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// Put or delete.
    pub kind: ChangeKind,
    /// The key written.
    pub key: Vec<u8>,
    /// The value put (empty for a delete).
    pub value: Vec<u8>,
    /// The write's version: every op of one batch (or transaction) shares it.
    pub version: u64,
    /// The user-meta byte of a put (0 for a delete).
    pub user_meta: u8,
    /// When the put expires, in unix seconds; 0 = never.
    pub expires_at: u64,
}

impl Change {
    /// The change an op of a batch committed at `version` makes: `value`
    /// is a put's value or a range delete's end; `expires_at` is the
    /// absolute expiry the write path computed from the op's TTL.
    fn from_op(
        kind: ChangeKind,
        key: &[u8],
        value: &[u8],
        user_meta: u8,
        version: u64,
        expires_at: u64,
    ) -> Change {
        let put = kind == ChangeKind::Put;
        Change {
            kind,
            key: key.to_vec(),
            value: value.to_vec(),
            version,
            user_meta: if put { user_meta } else { 0 },
            expires_at: if put { expires_at } else { 0 },
        }
    }

    /// Bytes this change is counted as in queues and the history.
    fn charge(&self) -> usize {
        self.key.len() + self.value.len() + 48
    }
}

/// What to subscribe to; see [`crate::Db::subscribe`].
#[derive(Debug, Clone)]
pub struct SubscribeOptions {
    /// Deliver only keys starting with one of these; empty: every key.
    pub prefixes: Vec<Vec<u8>>,
    /// Deliver changes with a version above this one (from the history);
    /// `None`: from now on.
    pub from: Option<u64>,
    /// Bytes of undelivered changes this subscriber may have queued before it
    /// is told it fell behind. Default 8 MiB. A single batch larger than this
    /// is still queued when the queue is empty, so that it can be delivered.
    pub max_pending_bytes: usize,
}

impl Default for SubscribeOptions {
    fn default() -> Self {
        SubscribeOptions {
            prefixes: Vec::new(),
            from: None,
            max_pending_bytes: 8 << 20,
        }
    }
}

/// The changes of one batch, shared by the history and the queues of the
/// subscribers that take all keys.
struct Group {
    version: u64,
    changes: Vec<Change>,
    bytes: usize,
    /// Some change is in the keyspaces' region.
    reserved: bool,
    /// Some range delete ends at the keyspaces' marker.
    clamped: bool,
}

impl Group {
    fn new(version: u64, changes: Vec<Change>) -> Group {
        let bytes = changes.iter().map(Change::charge).sum();
        let reserved = changes.iter().any(|c| crate::keyspace::is_reserved(&c.key));
        let clamped = changes.iter().any(|c| {
            c.kind == ChangeKind::DeleteRange && c.value == crate::keyspace::RESERVED_PREFIX
        });
        Group {
            version,
            changes,
            bytes,
            reserved,
            clamped,
        }
    }
}

/// A write group's changes, gathered by its leader while the feed listens.
pub(crate) struct Collector {
    groups: Vec<Group>,
    current: Option<(u64, Vec<Change>)>,
}

impl Collector {
    /// Records `op` of `batch`, committed at `version`. Ops of one batch
    /// are added one after the other.
    pub(crate) fn add(&mut self, version: u64, batch: OpOf<'_>, expires_at: u64) {
        let (op, data) = batch;
        let span = |r: &std::ops::Range<usize>| &data[r.clone()];
        let (kind, value) = match &op.value {
            OpValue::Here(v) => (ChangeKind::Put, span(v)),
            OpValue::Own(v) => (ChangeKind::Put, &v[..]),
            OpValue::RangeEnd(end) => (ChangeKind::DeleteRange, span(end)),
            OpValue::Delete => (ChangeKind::Delete, &[][..]),
            OpValue::Merge(v) => (ChangeKind::Merge, span(v)),
        };
        let change = Change::from_op(
            kind,
            span(&op.key),
            value,
            op.user_meta,
            version,
            expires_at,
        );
        match &mut self.current {
            Some((v, changes)) if *v == version => changes.push(change),
            _ => {
                self.finish_batch();
                self.current = Some((version, vec![change]));
            }
        }
    }

    fn finish_batch(&mut self) {
        if let Some((v, changes)) = self.current.take() {
            self.groups.push(Group::new(v, changes));
        }
    }
}

/// Per subscriber, shared between the hub and its [`Subscription`].
struct Sub {
    id: u64,
    prefixes: Vec<Vec<u8>>,
    /// Bytes taken off the front of delivered keys (a keyspace's prefix).
    strip: usize,
    max_pending: usize,
    state: Mutex<SubState>,
    cv: Condvar,
}

struct SubState {
    queue: VecDeque<Arc<Group>>,
    pending: usize,
    /// The newest version the hub has considered for this subscriber.
    seen: u64,
    /// Every change at or below this version was delivered or filtered out.
    delivered: u64,
    /// Set when it fell behind: where to resume.
    behind: Option<u64>,
    closed: bool,
}

impl Sub {
    fn wants(&self, c: &Change) -> bool {
        // Keyspace changes go only to those who name the region.
        if crate::keyspace::is_reserved(&c.key)
            && !self
                .prefixes
                .iter()
                .any(|p| crate::keyspace::is_reserved(p))
        {
            return false;
        }
        if self.prefixes.is_empty() {
            return true;
        }
        if c.kind == ChangeKind::DeleteRange {
            // The range [key, value) meets the keys starting with p.
            let (start, end) = (&c.key, &c.value);
            return self.prefixes.iter().any(|p| {
                let below_end = end.is_empty() || end.as_slice() > p.as_slice();
                let above_start = crate::key::prefix_successor(p)
                    .is_none_or(|succ| start.as_slice() < succ.as_slice());
                below_end && above_start
            });
        }
        self.prefixes.iter().any(|p| c.key.starts_with(p))
    }

    /// This subscriber's part of `g`, if any.
    fn part(&self, g: &Arc<Group>) -> Option<Arc<Group>> {
        if self.prefixes.is_empty() && !g.reserved && !g.clamped {
            return Some(g.clone());
        }
        let changes: Vec<Change> = g
            .changes
            .iter()
            .filter(|c| self.wants(c))
            .map(|c| self.stripped(c))
            .collect();
        (!changes.is_empty()).then(|| Arc::new(Group::new(g.version, changes)))
    }

    /// `c` with the keyspace prefix taken off its key (and off a range
    /// end inside the keyspace; one past it becomes empty: the keyspace's
    /// end). For the default keyspace, a range ending at the keyspaces'
    /// marker ends at the default keyspace's end: empty, as it was given.
    fn stripped(&self, c: &Change) -> Change {
        let mut c = c.clone();
        if self.strip == 0 {
            if c.kind == ChangeKind::DeleteRange && c.value == crate::keyspace::RESERVED_PREFIX {
                c.value.clear();
            }
            return c;
        }
        let prefix = c.key.get(..self.strip).map(<[u8]>::to_vec);
        c.key.drain(..self.strip.min(c.key.len()));
        if c.kind == ChangeKind::DeleteRange {
            c.value = match prefix {
                Some(p) if c.value.starts_with(&p) => c.value[self.strip..].to_vec(),
                _ => Vec::new(),
            };
        }
        c
    }

    /// Queues `g` without waiting (the caller is a writer): past the bound,
    /// the queue goes and the subscriber is behind.
    fn push(&self, g: &Arc<Group>) {
        let part = self.part(g);
        let mut st = lock(&self.state);
        if st.behind.is_some() || st.closed {
            return;
        }
        st.seen = st.seen.max(g.version);
        let Some(part) = part else {
            return;
        };
        if !st.queue.is_empty() && st.pending + part.bytes > self.max_pending {
            let resume = st.delivered;
            st.queue.clear();
            st.pending = 0;
            st.behind = Some(resume);
        } else {
            st.pending += part.bytes;
            st.queue.push_back(part);
        }
        drop(st);
        self.cv.notify_all();
    }

    /// Ends the stream for an event the feed does not deliver (bulk load,
    /// drop) that came after version `at`, unless this subscriber started
    /// after it.
    fn interrupt(&self, at: u64) {
        let mut st = lock(&self.state);
        if st.behind.is_none() && !st.closed && st.seen <= at {
            st.queue.clear();
            st.pending = 0;
            st.behind = Some(st.delivered);
        }
        drop(st);
        self.cv.notify_all();
    }

    fn close(&self) {
        lock(&self.state).closed = true;
        self.cv.notify_all();
    }
}

struct Hub {
    subs: Vec<Arc<Sub>>,
    history: VecDeque<Arc<Group>>,
    history_bytes: usize,
    /// The history holds every change with a version above this.
    floor: u64,
    closed: bool,
    next_id: u64,
}

/// The Db's change-feed hub; see the module docs.
pub(crate) struct Feed {
    /// True while writers must capture their changes.
    capturing: AtomicBool,
    history_limit: usize,
    hub: Mutex<Hub>,
    /// Groups published since open (for tests of the zero-cost path).
    published: AtomicU64,
}

impl Feed {
    pub(crate) fn new(history_limit: usize) -> Feed {
        Feed {
            capturing: AtomicBool::new(false),
            history_limit,
            hub: Mutex::new(Hub {
                subs: Vec::new(),
                history: VecDeque::new(),
                history_bytes: 0,
                floor: 0,
                closed: false,
                next_id: 0,
            }),
            published: AtomicU64::new(0),
        }
    }

    /// A collector for the write group about to be written, or `None` while
    /// nothing listens. Called under the log lock, which `subscribe` also
    /// holds when it turns capture on: a group either captures or is
    /// committed before the subscription starts.
    #[inline]
    pub(crate) fn collector(&self) -> Option<Collector> {
        if !self.capturing.load(Ordering::Relaxed) {
            return None;
        }
        Some(Collector {
            groups: Vec::new(),
            current: None,
        })
    }

    /// Hands a visible group's changes to the history and the subscribers.
    /// Called under the log lock, in version order. Never waits on a subscriber.
    pub(crate) fn publish(&self, mut c: Collector) {
        c.finish_batch();
        if c.groups.is_empty() {
            return;
        }
        let groups: Vec<Arc<Group>> = c.groups.into_iter().map(Arc::new).collect();
        let mut hub = lock(&self.hub);
        if hub.closed {
            return;
        }
        for sub in &hub.subs {
            for g in &groups {
                sub.push(g);
            }
        }
        for g in groups {
            hub.history_bytes += g.bytes;
            hub.history.push_back(g);
        }
        while hub.history_bytes > self.history_limit {
            let Some(old) = hub.history.pop_front() else {
                break;
            };
            hub.history_bytes -= old.bytes;
            hub.floor = hub.floor.max(old.version);
        }
        self.published.fetch_add(1, Ordering::Relaxed);
    }

    /// Ends every subscription that started at or before `at`, for an event
    /// the feed does not deliver that came after version `at` (see the
    /// module docs); the history then starts after it.
    pub(crate) fn interrupt(&self, at: u64) {
        let mut hub = lock(&self.hub);
        for sub in &hub.subs {
            sub.interrupt(at);
        }
        hub.history.clear();
        hub.history_bytes = 0;
        hub.floor = hub.floor.max(at + 1);
    }

    /// Ends every subscription: the Db is closing.
    pub(crate) fn close(&self) {
        let mut hub = lock(&self.hub);
        hub.closed = true;
        self.capturing.store(false, Ordering::Relaxed);
        for sub in hub.subs.drain(..) {
            sub.close();
        }
        hub.history.clear();
    }

    /// Registers a subscriber. `now` is the newest visible version; the
    /// caller holds the log lock, so no write group is between capture and
    /// visibility.
    pub(crate) fn subscribe(
        self: &Arc<Self>,
        opts: SubscribeOptions,
        now: u64,
        strip: usize,
    ) -> Result<Subscription> {
        if opts.max_pending_bytes == 0 {
            return Err(Error::InvalidArgument(
                "max_pending_bytes must be at least 1".into(),
            ));
        }
        let mut hub = lock(&self.hub);
        if hub.closed {
            return Err(Error::Closed);
        }
        if !self.capturing.load(Ordering::Relaxed) {
            // Writes since capture last stopped (or since open) are not held.
            hub.history.clear();
            hub.history_bytes = 0;
            hub.floor = now;
        }
        let start = opts.from.unwrap_or(now);
        if start > now {
            return Err(Error::InvalidArgument(format!(
                "cannot subscribe from version {start}: the newest committed version is {now}"
            )));
        }
        if opts.from.is_some() && start < hub.floor {
            return Err(Error::FeedHistoryTooShort {
                from: start,
                oldest: hub.floor,
            });
        }
        hub.next_id += 1;
        let sub = Arc::new(Sub {
            id: hub.next_id,
            prefixes: opts.prefixes,
            strip,
            max_pending: opts.max_pending_bytes,
            state: Mutex::new(SubState {
                queue: VecDeque::new(),
                pending: 0,
                seen: start,
                delivered: start,
                behind: None,
                closed: false,
            }),
            cv: Condvar::new(),
        });
        {
            // The backlog from the history is queued whatever the bound: it
            // is bounded by the history's size.
            let mut st = lock(&sub.state);
            for g in hub.history.iter().filter(|g| g.version > start) {
                if let Some(part) = sub.part(g) {
                    st.pending += part.bytes;
                    st.queue.push_back(part);
                }
            }
            st.seen = now;
        }
        hub.subs.push(sub.clone());
        self.capturing.store(true, Ordering::Relaxed);
        Ok(Subscription {
            feed: self.clone(),
            sub,
            start,
        })
    }

    fn unsubscribe(&self, id: u64) {
        let mut hub = lock(&self.hub);
        hub.subs.retain(|s| s.id != id);
        if hub.subs.is_empty() && self.history_limit == 0 {
            self.capturing.store(false, Ordering::Relaxed);
        }
    }

    /// Write groups handed to the hub since open.
    #[cfg(test)]
    pub(crate) fn groups_published(&self) -> u64 {
        self.published.load(Ordering::Relaxed)
    }

    /// Holds the hub lock (tests: a writer must not need it while nothing listens).
    #[cfg(test)]
    pub(crate) fn hold_hub(&self) -> std::sync::MutexGuard<'_, impl Sized> {
        lock(&self.hub)
    }
}

/// A live subscription to the change feed, from [`crate::Db::subscribe`].
/// Dropping it (or [`Subscription::close`]) unsubscribes.
pub struct Subscription {
    feed: Arc<Feed>,
    sub: Arc<Sub>,
    start: u64,
}

impl Subscription {
    /// The version it started after: changes delivered have higher versions.
    pub fn start_version(&self) -> u64 {
        self.start
    }

    /// The next changes, in version order (a version's changes are never
    /// split between two calls): every change queued so far, waiting up to
    /// `timeout` (`None`: until one comes) for the first. `Ok(None)` when the
    /// timeout passed with nothing. Fails with [`Error::FellBehind`] once the
    /// subscriber fell behind (every later call too), and with
    /// [`Error::Closed`] once the Db is closed and every change committed
    /// before the close was delivered.
    pub fn next(&self, timeout: Option<Duration>) -> Result<Option<Vec<Change>>> {
        let deadline = timeout.map(|t| Instant::now() + t);
        let mut st = lock(&self.sub.state);
        loop {
            if let Some(resume_from) = st.behind {
                return Err(Error::FellBehind { resume_from });
            }
            if !st.queue.is_empty() {
                let queue = std::mem::take(&mut st.queue);
                st.pending = 0;
                st.delivered = st.seen;
                drop(st);
                let mut out = Vec::with_capacity(queue.iter().map(|g| g.changes.len()).sum());
                for g in queue {
                    match Arc::try_unwrap(g) {
                        Ok(g) => out.extend(g.changes),
                        Err(g) => out.extend(g.changes.iter().cloned()),
                    }
                }
                return Ok(Some(out));
            }
            if st.closed {
                return Err(Error::Closed);
            }
            st.delivered = st.seen;
            st = match deadline {
                None => self.sub.cv.wait(st).unwrap_or_else(|p| p.into_inner()),
                Some(d) => {
                    let left = d.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        return Ok(None);
                    }
                    self.sub
                        .cv
                        .wait_timeout(st, left)
                        .unwrap_or_else(|p| p.into_inner())
                        .0
                }
            };
        }
    }

    /// Unsubscribes (as dropping it does).
    pub fn close(self) {}
}

impl Drop for Subscription {
    fn drop(&mut self) {
        self.feed.unsubscribe(self.sub.id);
    }
}

impl std::fmt::Debug for Subscription {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Subscription")
            .field("start", &self.start)
            .field("prefixes", &self.sub.prefixes.len())
            .finish()
    }
}

impl crate::WriteBatch {
    /// Adds `change` as another Db's change feed delivered it: a put keeps
    /// its user meta and absolute expiry, and a range delete its bounds, in
    /// storage keys (a keyspace's changes land in the same keyspace). This
    /// is how a replica applies its master's writes; with
    /// [`WriteBatch::set_version`](crate::WriteBatch::set_version) they keep the master's version too.
    pub fn add_change(&mut self, change: &Change) -> &mut Self {
        let key = &change.key[..];
        match change.kind {
            ChangeKind::Put => self.put_raw(
                key,
                Some(&change.value),
                change.user_meta,
                change.expires_at,
            ),
            ChangeKind::DeleteRange => self.delete_range_raw(key, &change.value),
            ChangeKind::Merge => self.push_merge(key, &change.value, crate::batch::Space::Storage),
            _ => self.delete_raw(key),
        }
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Db, Options};
    use std::sync::mpsc;

    /// Puts on another thread while this one holds the hub lock: they must
    /// finish, so the write path does not take it.
    fn puts_finish_while_the_hub_is_held(db: &Arc<Db>, tag: &str) -> bool {
        let _hub = db.inner.feed.hold_hub();
        let (tx, rx) = mpsc::channel();
        let db2 = db.clone();
        let tag = tag.to_string();
        std::thread::spawn(move || {
            for i in 0..100 {
                db2.put(format!("{tag}{i}").as_bytes(), b"v").unwrap();
            }
            let _ = tx.send(());
        });
        rx.recv_timeout(Duration::from_secs(2)).is_ok()
    }

    #[test]
    fn without_a_subscriber_the_write_path_takes_no_feed_lock_and_captures_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let mut opts = Options::new(dir.path());
        opts.change_feed_history_bytes = 0;
        let db = Arc::new(Db::open(opts).unwrap());
        assert!(puts_finish_while_the_hub_is_held(&db, "a"));
        assert!(db.inner.feed.collector().is_none());
        assert_eq!(db.inner.feed.groups_published(), 0);

        // A subscriber turns capture on; with no history, dropping it turns it off.
        let sub = db.subscribe(SubscribeOptions::default()).unwrap();
        db.put(b"b", b"v").unwrap();
        assert_eq!(db.inner.feed.groups_published(), 1);
        assert!(!puts_finish_while_the_hub_is_held(&db, "c"));
        drop(sub);
        // The writer blocked above finishes once the hub is free.
        std::thread::sleep(Duration::from_millis(50));
        let published = db.inner.feed.groups_published();
        assert!(db.inner.feed.collector().is_none());
        assert!(puts_finish_while_the_hub_is_held(&db, "d"));
        assert_eq!(db.inner.feed.groups_published(), published);
    }

    #[test]
    fn with_a_history_capture_goes_on_after_the_last_subscriber_leaves() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(Options::new(dir.path())).unwrap();
        assert!(db.inner.feed.collector().is_none());
        drop(db.subscribe(SubscribeOptions::default()).unwrap());
        assert!(db.inner.feed.collector().is_some());
    }
}
