//! Collection: a round's files picked, their live entries moved to the
//! head of the log through the write pipeline, the files deleted.

use super::*;

/// The moves of one file, handed to the write pipeline in chunks of
/// `MOVE_CHUNK` bytes; entries that have expired are left behind.
pub(super) struct Mover<'a, E: GcEnv> {
    pub(super) env: &'a E,
    pub(super) now: u64,
    pub(super) chunk: Vec<Move>,
    pub(super) chunk_bytes: usize,
    /// Values and entry bytes moved so far (queued in `chunk` included).
    pub(super) values: u64,
    pub(super) bytes: u64,
    /// Time spent handing chunks over, when traced.
    pub(super) timed: bool,
    pub(super) moves: Duration,
}

impl<'a, E: GcEnv> Mover<'a, E> {
    pub(super) fn new(env: &'a E, now: u64, timed: bool) -> Mover<'a, E> {
        Mover {
            env,
            now,
            chunk: Vec::new(),
            chunk_bytes: 0,
            values: 0,
            bytes: 0,
            timed,
            moves: Duration::ZERO,
        }
    }

    /// Queues `m` unless it has expired (then false).
    pub(super) fn push(&mut self, m: Move) -> Result<bool> {
        if m.expires_at != 0 && m.expires_at <= self.now {
            return Ok(false);
        }
        self.values += 1;
        self.bytes += (ENTRY_HEADER_LEN + m.key.len() + m.value.len()) as u64;
        self.chunk_bytes += m.key.len() + m.value.len();
        self.chunk.push(m);
        if self.chunk_bytes >= MOVE_CHUNK {
            self.hand_over()?;
        }
        Ok(true)
    }

    pub(super) fn hand_over(&mut self) -> Result<()> {
        self.chunk_bytes = 0;
        if self.chunk.is_empty() {
            return Ok(());
        }
        let t = self.timed.then(Instant::now);
        self.env.write_moves(std::mem::take(&mut self.chunk))?;
        self.moves += t.map_or(Duration::ZERO, |t| t.elapsed());
        Ok(())
    }

    /// Hands over the last chunk: (values, bytes, time handing over).
    pub(super) fn finish(mut self) -> Result<(u64, u64, Duration)> {
        self.hand_over()?;
        Ok((self.values, self.bytes, self.moves))
    }
}

impl GcState {
    /// One round of at most one file (`Db::run_value_log_gc`): the file with
    /// the largest garbage share if it is at least `ratio`, reading and
    /// rewriting at most `rate` bytes a second (0: no limit).
    pub(crate) fn collect_one<E: GcEnv>(
        &self,
        env: &E,
        ratio: f64,
        rate: u64,
    ) -> Result<GcOutcome> {
        let pace = Pace {
            rate,
            writing: false,
        };
        let outcomes = self.collect(env, ratio, pace, false, 1)?;
        Ok(outcomes
            .first()
            .copied()
            .unwrap_or(GcOutcome::NothingToCollect))
    }

    /// One round: collects the files whose garbage share is at least
    /// `ratio`, largest share first, as many as fit in `max_bytes` (one at
    /// least), reading and rewriting at most `pace.rate` bytes a second (0:
    /// no limit; none either while writes run and the round is behind, see
    /// `CATCH_UP_FILES`); `background`: the GC thread, which does not wait
    /// to seal the head or for a flush. The round's fixed costs (sampling, the flush, the sync before
    /// deleting, the manifest record) are paid once for all its files, so a
    /// GC that fell behind catches up faster than writes make garbage.
    /// Returns what happened to each file collected (none: nothing to collect).
    pub(super) fn collect<E: GcEnv>(
        &self,
        env: &E,
        ratio: f64,
        pace: Pace,
        background: bool,
        max_bytes: u64,
    ) -> Result<Vec<GcOutcome>> {
        let _one_at_a_time = lock(&self.lock);
        let started = Instant::now();
        let mut trace = Trace::start(pace.rate);
        let outcomes =
            self.collect_locked(env, ratio, pace, background, max_bytes, started, &mut trace);
        self.counts
            .micros
            .fetch_add(started.elapsed().as_micros() as u64, Ordering::Relaxed);
        if trace.on() {
            trace.finish(&match &outcomes {
                Ok(o) => format!("{}", o.len()),
                Err(e) => format!("error({e})"),
            });
        }
        outcomes
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn collect_locked<E: GcEnv>(
        &self,
        env: &E,
        ratio: f64,
        pace: Pace,
        background: bool,
        max_bytes: u64,
        started: Instant,
        trace: &mut Trace,
    ) -> Result<Vec<GcOutcome>> {
        env.check_writable()?;
        let opts = env.opts();
        let mut head = env.head_vlog();
        let discard = env.discard();
        let share = |f: &VlogFile| garbage_share(&discard, f);
        let appended = env.vlog_appended();
        // The head is only ever appended to, so it cannot be collected; but a
        // head that compactions found mostly garbage is sealed (a new head is
        // started) once it is large enough, so that it can be: otherwise a
        // database smaller than one value-log file never gets space back.
        // The background GC does not wait for the log lock here: a writer
        // that takes it back to back kept it out for seconds, and a busy
        // writer seals the head itself at `vlog_head_target`.
        if let Some(h) = env.read_state().vlogs.get(head) {
            if h.len()? >= seal_head_at(opts) && share(&h)? >= ratio {
                if let Some(now) = env.seal_head(head, !background)? {
                    head = now;
                }
            }
        }
        trace.mark(Phase::Seal);
        let st = env.read_state();
        let head = head.min(env.head_vlog());
        let damaged = lock(&self.samples).damaged.clone();
        let sealed: Vec<_> = st
            .vlogs
            .all()
            .filter(|f| f.id() < head && !damaged.contains(&f.id()))
            .cloned()
            .collect();
        drop(st);
        // The idle tier judges files by walks over the tree, not lookups.
        let walking = background && ratio < opts.vlog_gc_ratio;
        if !walking {
            // Its entries go stale with writes: keep only when it was taken.
            if let Some(w) = lock(&self.samples).walked.as_mut() {
                w.live = HashMap::new();
            }
        }
        if !walking {
            // (A walk measures every file: no lookups beside it.)
            self.resample(env, &sealed, &discard, ratio, appended, trace)?;
        }
        let shares_now = |sealed: &[Arc<VlogFile>]| -> Result<Vec<_>> {
            let mut shares = Vec::with_capacity(sealed.len());
            for f in sealed {
                shares.push((self.estimated_share(&discard, f)?, f.clone()));
            }
            Ok(shares)
        };
        if walking {
            let mut sealed_bytes = 0u64;
            for f in &sealed {
                sealed_bytes += f.len()?;
            }
            if self.walk_due(env, sealed_bytes) {
                let record = walk_set(
                    &[],
                    shares_now(&sealed)?,
                    ratio,
                    &self.scattered(),
                    walk_record_bytes(opts),
                )?;
                self.walk(env, &sealed, &record, trace)?;
            }
        }
        trace.mark(Phase::Sample);
        if background {
            self.switch_ahead(env, &sealed, trace)?;
        }
        let shares = shares_now(&sealed)?;
        let mut files = pick(shares.clone(), ratio, max_bytes)?;
        if files.is_empty() && walking {
            // Nothing holds garbage enough: the idle tier puts scattered
            // files in key order (once each: its output is not scattered).
            files = self.pick_scattered(&sealed, max_bytes)?;
        }
        if files.is_empty() {
            return Ok(Vec::new());
        }
        // WALs written while a file was the head may point into it: flush
        // them away (a replay after a crash would otherwise stop at a pointer
        // into a deleted file, and lose every later record). WALs and
        // value-log files share one id counter, so a WAL started after the
        // file was sealed has an id above the head that replaced it; if every
        // live WAL has, no flush is needed. That head is recorded at the
        // rotation: the next larger value-log id is not it when a bulk load
        // made files meanwhile (power_loss.rs covers a head collected soon
        // after it was sealed). A file sealed before this open needs no
        // flush: open flushed and removed every WAL it replayed, and every
        // WAL since is past it (`GcState::note_opened`; power_loss.rs cuts
        // the power through such a collection after a killed process), so a
        // flush would only delay each round after a load. A file that was
        // never a head (a bulk load's) is collected after a flush.
        //
        // The background GC does not wait for the flush: it switches the
        // memtable (if the current one's WAL may point into a file picked)
        // and leaves those files to a round after the flush (the flush
        // thread wakes it); the others are collected now. A flush took up to
        // 330 ms under load, and a round that waited for it left every other
        // file waiting too. A caller of `run_value_log_gc` waits: one flush
        // covers every file of its round, all sealed before it.
        let replaced_by: Vec<Option<u64>> = {
            let sealed_for = lock(&self.sealed_for);
            files
                .iter()
                .map(|f| sealed_for.get(&f.id()).copied())
                .collect()
        };
        // The oldest WAL still live: every older one is flushed, recorded
        // (the manifest's log number is past it) and removed. (The log
        // number itself is only the flushed WAL's id + 1, at or below the
        // head that replaced a file sealed while that WAL was current: a
        // test of it asked for a flush on nearly every round.)
        let oldest_wal = {
            let st = env.read_state();
            st.imm
                .iter()
                .map(|m| m.wal_id())
                .fold(st.mem.wal_id(), u64::min)
        };
        let flushed = |next: Option<u64>| next.is_some_and(|next| oldest_wal > next);
        trace.mark(Phase::Pick);
        let mem = env.read_state().mem.clone();
        if background && replaced_by.iter().all(|&r| r.is_some()) && !mem.is_empty() {
            // An empty memtable's WAL points nowhere: then the flush below
            // waits only for older memtables, as `flush` does.
            let switch = replaced_by
                .iter()
                .any(|&r| r.is_some_and(|next| mem.wal_id() <= next));
            if switch {
                env.switch_memtable(trace)?;
                trace.mark(Phase::FlushSwitch);
            }
            let mut kept = Vec::with_capacity(files.len());
            for (f, r) in files.into_iter().zip(replaced_by) {
                if flushed(r) {
                    kept.push(f);
                }
            }
            files = kept;
            if files.is_empty() {
                return Ok(Vec::new());
            }
        } else if !replaced_by.into_iter().all(flushed) {
            flush(env, trace)?;
        }
        drop(mem);
        trace.collected = files.iter().map(|f| f.id()).collect();
        if walking {
            let covered = lock(&self.samples)
                .walked
                .as_ref()
                .is_some_and(|w| w.covers(&trace.collected));
            if !covered {
                let scattered = self.scattered();
                let record = walk_set(&files, shares, ratio, &scattered, walk_record_bytes(opts))?;
                self.walk(env, &sealed, &record, trace)?;
                // The walk measured them: only those still due are collected.
                let scattered = self.scattered();
                let mut due = Vec::with_capacity(files.len());
                for f in files {
                    if self.estimated_share(&discard, &f)? >= ratio || scattered.contains(&f.id()) {
                        due.push(f);
                    }
                }
                files = due;
                trace.collected = files.iter().map(|f| f.id()).collect();
                if files.is_empty() {
                    return Ok(Vec::new());
                }
            }
            trace.mark(Phase::Sample);
        }
        // Taken out for the moves (stats read the samples meanwhile), put back after.
        let walked = if walking {
            lock(&self.samples).walked.take()
        } else {
            None
        };
        let mut round_bytes = 0u64;
        for f in &files {
            round_bytes += f.len()?;
        }
        let rate = if pace.writing && round_bytes >= CATCH_UP_FILES * self.head_target() {
            0
        } else {
            pace.rate
        };
        trace.rate = rate;

        // What the rate limits: bytes read, plus what was moved, over the round.
        let mut pacer = Pacer::new(rate, background, started);
        // What each file's moves came to, or the damage that keeps it.
        let round_ids: Vec<u32> = files.iter().map(|f| f.id()).collect();
        let moved: Vec<Result<(u64, u64)>> = match walked.as_ref().filter(|w| w.covers(&round_ids))
        {
            Some(w) => {
                let moved = move_in_key_order(env, &files, w, &mut pacer, trace)?;
                // The round's output is one stream of keys in order. Were
                // the next round's appended to the same file, a scan would
                // read that file at two places at once, where its read-ahead
                // follows one: each round that moved much gets files of its own.
                let bytes: u64 = moved.iter().flatten().map(|&(_, b)| b).sum();
                if bytes >= OWN_FILE_BYTES {
                    env.seal_head(env.head_vlog(), !background)?;
                }
                moved
            }
            None => {
                let mut done = 0u64;
                let mut moved = Vec::with_capacity(files.len());
                for file in &files {
                    let r = move_live(env, file, walked.as_ref(), &mut pacer, done, trace);
                    if let Ok((_, bytes)) = &r {
                        done += file.len()? + bytes;
                    }
                    match r {
                        Err(e) if !e.is_corruption() => return Err(e),
                        r => moved.push(r),
                    }
                }
                moved
            }
        };
        let mut outcomes = Vec::with_capacity(files.len());
        // A file with a damaged live entry stays (what was moved of it is
        // garbage now); the round goes on with the others.
        let mut damage: Option<Error> = None;
        let mut kept = Vec::with_capacity(files.len());
        for (file, r) in files.into_iter().zip(moved) {
            let file_bytes = file.len()?;
            let (moved_values, moved_bytes) = match r {
                Ok(moved) => moved,
                Err(e) => {
                    lock(&self.samples).damaged.insert(file.id());
                    damage.get_or_insert(e);
                    continue;
                }
            };
            kept.push(file.clone());
            trace.bytes += file_bytes;
            trace.moved += moved_bytes;
            outcomes.push(if moved_values == 0 {
                GcOutcome::Deleted {
                    file: file.id(),
                    freed_bytes: file_bytes,
                }
            } else {
                GcOutcome::Rewritten {
                    file: file.id(),
                    moved_values,
                    moved_bytes,
                    freed_bytes: file_bytes.saturating_sub(moved_bytes),
                }
            });
        }
        let files = kept;
        if let Some(w) = walked {
            lock(&self.samples).walked = Some(w);
        }
        // A caller of `run_value_log_gc` learns of the damage; the
        // background GC counts it (`Stats::gc_damaged_files`) and goes on.
        let finish = |outcomes: Vec<GcOutcome>| match damage {
            Some(e) if !background => Err(e),
            _ => Ok(outcomes),
        };
        if files.is_empty() {
            return finish(outcomes);
        }
        env.sync_for_delete()?;
        trace.mark(Phase::Sync);
        let ids: Vec<u32> = files.iter().map(|f| f.id()).collect();
        env.log_vlogs_deleted(&ids)?;
        // Counted before the files leave the read state: stats never show
        // the backlog gone (`gc_due`) without the collection that did it.
        for outcome in &outcomes {
            self.count(outcome);
        }
        {
            let mut sealed_for = lock(&self.sealed_for);
            for id in &ids {
                sealed_for.remove(id);
            }
        }
        env.delete_vlogs(&files)?;
        // The last handles: unmapping and closing an unlinked file frees its
        // pages and blocks (30-85 ms a round under load), part of the deletion.
        drop(files);
        trace.mark(Phase::Delete);
        finish(outcomes)
    }

    /// Files of the last walk found scattered (`Walked::scattered`).
    pub(super) fn scattered(&self) -> HashSet<u32> {
        lock(&self.samples)
            .walked
            .as_ref()
            .map(|w| w.scattered.clone())
            .unwrap_or_default()
    }

    /// Of `sealed`, the files the last walk found scattered, oldest first,
    /// as many as fit in `max_bytes` (the first whatever its size).
    fn pick_scattered(
        &self,
        sealed: &[Arc<VlogFile>],
        max_bytes: u64,
    ) -> Result<Vec<Arc<VlogFile>>> {
        let scattered = self.scattered();
        let mut files: Vec<(f64, Arc<VlogFile>)> = sealed
            .iter()
            .filter(|f| scattered.contains(&f.id()))
            .map(|f| (1.0, f.clone()))
            .collect();
        files.sort_by_key(|(_, f)| f.id());
        // (Equal shares: `pick`'s stable sort keeps them oldest first.)
        pick(files, 0.0, max_bytes)
    }

    /// Switches the memtable when its WAL may point into `SWITCH_AHEAD_FILES`
    /// or more of the `sealed` files (they were heads while it was current):
    /// with large values a memtable of pointers outlives many value-log
    /// files, and every file that became garbage would wait for a flush
    /// (tens to hundreds of ms under load) before it could be deleted
    /// (see docs/gc-pacing.md). Switched ahead, the
    /// WAL is flushed by the time the files' keys are overwritten.
    pub(super) fn switch_ahead<E: GcEnv>(
        &self,
        env: &E,
        sealed: &[Arc<VlogFile>],
        trace: &mut Trace,
    ) -> Result<()> {
        let mem_wal = env.read_state().mem.wal_id();
        let spanned = {
            let sealed_for = lock(&self.sealed_for);
            sealed
                .iter()
                .filter(|f| sealed_for.get(&f.id()).is_some_and(|&next| next > mem_wal))
                .count()
        };
        if spanned >= SWITCH_AHEAD_FILES {
            env.switch_memtable(trace)?;
            trace.mark(Phase::FlushSwitch);
        }
        Ok(())
    }

    /// Adds a collection to the GC counters of `Stats`.
    pub(super) fn count(&self, outcome: &GcOutcome) {
        let (files, freed) = match outcome {
            GcOutcome::NothingToCollect => return,
            GcOutcome::Deleted { freed_bytes, .. } => (&self.counts.files_deleted, freed_bytes),
            GcOutcome::Rewritten { freed_bytes, .. } => (&self.counts.files_rewritten, freed_bytes),
        };
        files.fetch_add(1, Ordering::Relaxed);
        self.counts
            .bytes_reclaimed
            .fetch_add(*freed, Ordering::Relaxed);
    }
}

/// The GC's flush of the WALs that may point into the files it collects
/// (`DbInner::flush`, with its phases traced): a memtable switch, then a
/// wait until every memtable up to it is in a table.
fn flush<E: GcEnv>(env: &E, trace: &mut Trace) -> Result<()> {
    let through = env.switch_memtable(trace)?;
    trace.mark(Phase::FlushSwitch);
    if let Some(wal_id) = through {
        env.wait_flushed_through(wal_id)?;
    }
    trace.mark(Phase::FlushWait);
    Ok(())
}

/// Moves each entry of `file` that is still the newest version of its
/// key to the head of the log (through the write pipeline, in chunks),
/// keeping `done_before` bytes of the round plus this file's within
/// `pacer`'s limit. Returns the values and bytes moved.
/// With `walked` (which recorded `file`), the walk's live entries are
/// moved without a lookup each.
///
/// Every live entry is moved, or the result is an error and the caller
/// keeps the file: where the walk in file order stops short of the end
/// (a torn tail, or damage), the tree names the live entries past the
/// stop and each is read by its pointer. A damaged live entry is
/// [`Error::Corruption`] naming the file and its offset; damage in
/// garbage costs nothing.
/// (version, user meta, expiry) of the value `key` has now if `ptr` holds
/// it: the newest version that is not a merge operand (an entry under
/// operands is their base, and live).
fn live_base<E: GcEnv>(env: &E, key: &[u8], ptr: ValuePointer) -> Result<Option<(u64, u8, u64)>> {
    let st = env.read_state();
    let found = st.lookup_base(key, crate::key::MAX_SEQ)?;
    Ok(found.and_then(|b| {
        let rec = value::decode(&b.raw)?;
        (rec.stored == Stored::Pointer(ptr)).then_some((b.version, rec.user_meta, rec.expires_at))
    }))
}

pub(super) fn move_live<E: GcEnv>(
    env: &E,
    file: &VlogFile,
    walked: Option<&Walked>,
    pacer: &mut Pacer,
    done_before: u64,
    trace: &mut Trace,
) -> Result<(u64, u64)> {
    let timed = trace.on();
    let (mut lookups, mut sleeps) = (Duration::ZERO, Duration::ZERO);
    let clock = || timed.then(Instant::now);
    let since = |t: Option<Instant>| t.map_or(Duration::ZERO, |t| t.elapsed());
    let mut mover = Mover::new(env, env.now(), timed);
    let end = file.for_each_entry(|ptr, key, value| {
        // Bytes read so far, plus what was moved: what the rate limits.
        let done = done_before + ptr.offset + u64::from(ptr.len) + mover.bytes;
        if pacer.due(done) {
            let t = clock();
            pacer.step(env, done)?;
            sleeps += since(t);
        }
        // An entry under merge operands is looked up (its move carries no
        // walk's sequence): the write leader then checks it through the
        // tables, where the operands may be.
        let walked_entry = walked.and_then(|w| w.entry(ptr.file, ptr.offset));
        let live = match walked_entry {
            Some(e) if !e.under_merge => Some((e.version, e.user_meta, e.expires_at)),
            _ if walked.is_some() && walked_entry.is_none() => None,
            _ => {
                let t = clock();
                let found = live_base(env, key, ptr)?;
                lookups += since(t);
                found
            }
        };
        let Some((version, user_meta, expires_at)) = live else {
            return Ok(());
        };
        let walked_at = walked
            .filter(|_| !walked_entry.is_some_and(|e| e.under_merge))
            .map(|w| w.seq);
        mover.push(Move {
            key: key.to_vec(),
            value: value.to_vec(),
            version,
            user_meta,
            expires_at,
            old: ptr,
            walked_at,
        })?;
        Ok(())
    })?;
    if let WalkEnd::Stopped { offset: stop, .. } = end {
        let t = clock();
        let fresh;
        let w = match walked.filter(|w| w.covers(&[file.id()])) {
            Some(w) => w,
            None => {
                fresh = walk::walk_live(env, &HashSet::from([file.id()]))?;
                &fresh
            }
        };
        lookups += since(t);
        let past = w.live.get(&file.id()).map_or(&[][..], |e| &e[..]);
        for e in past.iter().filter(|e| e.offset >= stop) {
            let ptr = ValuePointer {
                file: file.id(),
                offset: e.offset,
                len: e.len,
            };
            let (key, value) = file.read_entry(ptr)?;
            mover.push(Move {
                key,
                value,
                version: e.version,
                user_meta: e.user_meta,
                expires_at: e.expires_at,
                old: ptr,
                walked_at: (!e.under_merge).then_some(w.seq),
            })?;
        }
    }
    let (values, bytes, moves) = mover.finish()?;
    trace.add(Phase::Lookup, lookups);
    trace.add(Phase::Move, moves);
    trace.add(Phase::Throttle, sleeps);
    trace.mark(Phase::Read);
    Ok((values, bytes))
}

/// Moves the live entries of `files`, all recorded by `walked`, in the
/// order of their keys, whichever file each is in: the values a round
/// rewrites then lie in key order in the head of the log, and a forward scan
/// over them reads each round's output front to back (one stream per round,
/// which `read_many` coalesces and reads ahead) instead of one random read
/// per value. Keeps the round's bytes read and moved within `pacer`'s limit.
///
/// Each entry is read by its pointer, so garbage is never read: damage in
/// it costs nothing. The round's files are first asked for whole (they are
/// read in full anyway, and in key order the reads would otherwise go to the
/// device one entry at a time). Returns, per file, the values and bytes
/// moved, or the corruption error of its first damaged live entry: that
/// file's later entries are left where they are (what was moved of it is
/// garbage now) and the other files' entries are still moved.
pub(super) fn move_in_key_order<E: GcEnv>(
    env: &E,
    files: &[Arc<VlogFile>],
    walked: &Walked,
    pacer: &mut Pacer,
    trace: &mut Trace,
) -> Result<Vec<Result<(u64, u64)>>> {
    let timed = trace.on();
    let (mut lookups, mut sleeps) = (Duration::ZERO, Duration::ZERO);
    let clock = || timed.then(Instant::now);
    let since = |t: Option<Instant>| t.map_or(Duration::ZERO, |t| t.elapsed());
    let mut order: Vec<(u32, usize, walk::LiveEntry)> = Vec::new();
    // Bytes read so far (each file whole, when it is asked for), plus what
    // was moved: what the rate limits.
    let mut read = 0u64;
    for (i, f) in files.iter().enumerate() {
        read += f.len()?;
        if pacer.due(read) {
            let t = clock();
            pacer.step(env, read)?;
            sleeps += since(t);
        }
        f.will_need_all()?;
        let entries = walked.live.get(&f.id()).map_or(&[][..], |e| &e[..]);
        order.extend(entries.iter().map(|e| (e.rank, i, *e)));
    }
    order.sort_unstable_by_key(|&(rank, i, e)| (rank, i, e.offset));
    let mut moved: Vec<Result<(u64, u64)>> = vec![Ok((0, 0)); files.len()];
    let mut mover = Mover::new(env, env.now(), timed);
    for (_, i, e) in order {
        let Ok((values, bytes)) = moved[i] else {
            continue;
        };
        let done = read + mover.bytes;
        if pacer.due(done) {
            let t = clock();
            pacer.step(env, done)?;
            sleeps += since(t);
        }
        let file = &files[i];
        let ptr = ValuePointer {
            file: file.id(),
            offset: e.offset,
            len: e.len,
        };
        let (key, value) = match file.read_entry(ptr) {
            Ok(entry) => entry,
            Err(err) if err.is_corruption() => {
                moved[i] = Err(err);
                continue;
            }
            Err(err) => return Err(err),
        };
        // A base under merge operands is looked up, as `move_live` does:
        // the write leader then checks it through the tables.
        let live = if e.under_merge {
            let t = clock();
            let found = live_base(env, &key, ptr)?;
            lookups += since(t);
            found
        } else {
            Some((e.version, e.user_meta, e.expires_at))
        };
        let Some((version, user_meta, expires_at)) = live else {
            continue;
        };
        let entry_bytes = (ENTRY_HEADER_LEN + key.len() + value.len()) as u64;
        let queued = mover.push(Move {
            key,
            value,
            version,
            user_meta,
            expires_at,
            old: ptr,
            walked_at: (!e.under_merge).then_some(walked.seq),
        })?;
        if queued {
            moved[i] = Ok((values + 1, bytes + entry_bytes));
        }
    }
    let (_, _, moves) = mover.finish()?;
    trace.add(Phase::Lookup, lookups);
    trace.add(Phase::Move, moves);
    trace.add(Phase::Throttle, sleeps);
    trace.mark(Phase::Read);
    Ok(moved)
}
