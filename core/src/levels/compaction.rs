//! Choosing and running compactions.
//!
//! L0 is compacted (all of it, with the overlapping tables of the base level)
//! once it holds `l0_compaction_trigger` tables. A deeper level is compacted
//! one table at a time when it exceeds its target size: the table with the
//! least overlap below per byte of its own (see [`pick`]). The base level is L1 with static sizing; with
//! `level_dynamic` the targets are set from the last level up and the base
//! level is the highest one whose target reaches about `level_base_size`
//! (see [`Shape`]).
//! Versions shadowed by a newer one that every reader can see are dropped, and
//! so are tombstones when no deeper level holds the key.

use super::Version;
use crate::error::{Error, Result};
use crate::filename;
use crate::iter::{MergeIter, Source};
use crate::key;
use crate::options::Options;
use crate::range_del::RangeDels;
use crate::table::codec::KeyspaceCodecs;
use crate::table::{Table, TableBuilder, TableIter, TableMeta};
use crate::value::{self, Stored};
use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::Arc;

pub(crate) struct Compaction {
    pub level: usize,
    pub inputs: Vec<Arc<Table>>,
    /// Overlapping tables of the output level.
    pub next: Vec<Arc<Table>>,
    /// Where the output goes: `level + 1`, or `level` itself when a table is
    /// rewritten in place (DropPrefix).
    pub out_level: usize,
    /// No deeper level holds any key of the range: tombstones can go.
    pub bottom: bool,
    /// Keys with this prefix are dropped (DropPrefix).
    pub drop_prefix: Option<Vec<u8>>,
}

/// What a compaction wrote and what it found to be garbage.
pub(crate) struct Output {
    /// (id, metadata) per new table, each file synced.
    pub tables: Vec<(u64, TableMeta)>,
    /// Bytes of value-log entries whose pointers were dropped, per file.
    pub discard: HashMap<u32, u64>,
}

impl Compaction {
    /// `inputs` of `level` merged with what overlaps them one level down.
    fn down(
        v: &Version,
        level: usize,
        inputs: Vec<Arc<Table>>,
        drop_prefix: Option<Vec<u8>>,
    ) -> Compaction {
        Compaction::into_level(v, level, level + 1, inputs, drop_prefix)
    }

    /// `inputs` of `level` merged with what overlaps them in `out_level`.
    /// Requires: every level between the two is empty, so that no version
    /// moves below an older one of its key.
    fn into_level(
        v: &Version,
        level: usize,
        out_level: usize,
        inputs: Vec<Arc<Table>>,
        drop_prefix: Option<Vec<u8>>,
    ) -> Compaction {
        debug_assert!((level + 1..out_level).all(|l| v.levels[l].is_empty()));
        let (lo, hi) = range_of(&inputs);
        let next = v.overlapping(out_level, &lo, &hi);
        let (lo, hi) = range_of(&[inputs.as_slice(), next.as_slice()].concat());
        let bottom = (out_level + 1..v.levels.len()).all(|l| v.overlapping(l, &lo, &hi).is_empty());
        Compaction {
            level,
            inputs,
            next,
            out_level,
            bottom,
            drop_prefix,
        }
    }

    pub(crate) fn out_level(&self) -> usize {
        self.out_level
    }

    pub(crate) fn all_tables(&self) -> impl Iterator<Item = &Arc<Table>> {
        self.inputs.iter().chain(self.next.iter())
    }

    /// One input table and nothing to merge with: move it down without rewriting.
    pub(crate) fn is_trivial_move(&self) -> bool {
        self.inputs.len() == 1
            && self.next.is_empty()
            && self.drop_prefix.is_none()
            && self.out_level != self.level
    }
}

/// The tree's shape for picking compactions: where L0 goes and what each
/// level below it may hold.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Shape {
    /// The level L0 compacts into. Levels between L0 and it are empty.
    pub base: usize,
    /// Target bytes per level; 0 for L0, for the levels above `base` and for
    /// the last level, which nothing compacts down from.
    pub targets: Vec<u64>,
}

impl Shape {
    /// Static sizing: L1 is the base and targets `level_base_size`, each level
    /// below `level_multiplier` times more.
    ///
    /// Dynamic sizing (`level_dynamic`, RocksDB's
    /// level_compaction_dynamic_level_bytes): the largest level's size, divided
    /// by `level_multiplier` once per level above the last, gives the size
    /// the first non-empty level would have; the base moves up from there
    /// while that size is above `level_base_size`. The base level targets that
    /// size, at least `level_base_size / level_multiplier`, and each level
    /// below `level_multiplier` times more. The base is never below the first
    /// non-empty level, so L0 skips only empty levels.
    pub(crate) fn of(v: &Version, opts: &Options) -> Shape {
        let n = v.levels.len();
        let mult = opts.level_multiplier.max(2);
        let mut targets = vec![0; n];
        if n < 2 {
            return Shape { base: 1, targets };
        }
        let last = n - 1;
        let (base, base_target) = if opts.level_dynamic {
            let first = (1..=last)
                .find(|&l| !v.levels[l].is_empty())
                .unwrap_or(last);
            let largest = (1..=last).map(|l| v.level_bytes(l)).max().unwrap_or(0);
            let mut size = largest;
            for _ in first..last {
                size /= mult;
            }
            let mut base = first;
            while base > 1 && size > opts.level_base_size {
                base -= 1;
                size /= mult;
            }
            (base, size.max(opts.level_base_size / mult))
        } else {
            (1, opts.level_base_size)
        };
        let mut t = base_target;
        for target in targets.iter_mut().take(last).skip(base) {
            *target = t;
            t = t.saturating_mul(mult);
        }
        Shape { base, targets }
    }
}

pub(crate) fn range_of(tables: &[Arc<Table>]) -> (Vec<u8>, Vec<u8>) {
    let lo = tables
        .iter()
        .map(|t| key::user_key(t.smallest()))
        .min()
        .unwrap_or(&[]);
    let hi = tables
        .iter()
        .map(|t| key::user_key(t.largest()))
        .max()
        .unwrap_or(&[]);
    (lo.to_vec(), hi.to_vec())
}

/// The levels due for compaction, most urgent first: L0 once it holds
/// `l0_compaction_trigger` tables (or any table, when the Db is `idle`), a
/// deeper level (not the last) once it holds more than its target size.
///
/// Idle: writes stopped with tables left in L0. Their shadowed versions are
/// value-log garbage no compaction has counted yet, so the background GC
/// cannot see it; merging L0 down while nothing else happens counts it (the
/// GC loop decides when the Db is idle).
pub(crate) fn due(v: &Version, opts: &Options, idle: bool) -> Vec<usize> {
    let last = v.levels.len().saturating_sub(1);
    let shape = Shape::of(v, opts);
    let mut scored: Vec<(f64, usize)> = Vec::new();
    let l0 = v.levels.first().map_or(0, |l| l.len());
    if l0 >= opts.l0_compaction_trigger || (idle && l0 > 0 && last > 0) {
        scored.push((l0 as f64 / opts.l0_compaction_trigger as f64, 0));
    }
    for level in 1..last {
        let bytes = v.level_bytes(level);
        // Levels above the base are empty (the base is never below the first
        // non-empty level) and have no target.
        let score = match shape.targets[level] {
            0 => 0.0,
            target => bytes as f64 / target as f64,
        };
        if score > 1.0 {
            scored.push((score, level));
        }
    }
    scored.sort_by(|a, b| b.0.total_cmp(&a.0));
    scored.into_iter().map(|(_, level)| level).collect()
}

/// Picks the most urgent compaction whose tables are all free, if any is due.
///
/// L0 goes whole. A deeper level gives the free table whose overlap one level
/// down is smallest for its own size (RocksDB's `kMinOverlappingRatio`,
/// Pebble's file picking): it rewrites the fewest bytes below per byte it
/// moves. A table with no overlap ends the search (a move without a
/// rewrite). Ties go to the first in round-robin order from
/// `cursors[level]`, where the last compaction of the level ended, so that
/// equal tables take turns through the key space.
pub(crate) fn pick(
    v: &Version,
    opts: &Options,
    busy: &HashSet<u64>,
    cursors: &mut [Vec<u8>],
    idle: bool,
) -> Option<Compaction> {
    for level in due(v, opts, idle) {
        if level == 0 {
            let inputs = v.levels[0].clone();
            if inputs.iter().any(|t| busy.contains(&t.id())) {
                continue;
            }
            let c = Compaction::into_level(v, 0, Shape::of(v, opts).base, inputs, None);
            if c.next.iter().any(|t| busy.contains(&t.id())) {
                continue;
            }
            return Some(c);
        }
        let tables = &v.levels[level];
        let start =
            tables.partition_point(|t| key::user_key(t.smallest()) <= cursors[level].as_slice());
        let mut best: Option<(u128, u128, &Arc<Table>)> = None;
        for t in tables[start..].iter().chain(tables[..start].iter()) {
            if busy.contains(&t.id()) {
                continue;
            }
            let (lo, hi) = (key::user_key(t.smallest()), key::user_key(t.largest()));
            let Some(below) = v.overlap_bytes(level + 1, lo, hi, busy) else {
                continue;
            };
            // below / size < best_below / best_size, without division.
            let size = u128::from(t.size().max(1));
            let better =
                best.is_none_or(|(b_below, b_size, _)| u128::from(below) * b_size < b_below * size);
            if better {
                best = Some((u128::from(below), size, t));
            }
            if below == 0 {
                break;
            }
        }
        if let Some((_, _, t)) = best {
            cursors[level] = key::user_key(t.largest()).to_vec();
            return Some(Compaction::down(v, level, vec![t.clone()], None));
        }
    }
    None
}

/// True when `t` may hold a version that a tombstone of sequence at most
/// `range_seq` (durable, and seen by every reader) hides: a compaction then
/// rewrites it rather than moving it down as it is.
pub(crate) fn needs_cleaning(t: &Table, dels: &RangeDels, range_seq: u64) -> bool {
    let (lo, hi) = (key::user_key(t.smallest()), key::user_key(t.largest()));
    dels.iter()
        .any(|d| d.seq <= range_seq && d.seq > t.range_clean() && d.meets(lo, hi))
}

/// A compaction that drops what range tombstones hide, for when no
/// compaction is due: the first table (deepest level first) that
/// [`needs_cleaning`] and whose compaction takes no busy table. L0 goes down
/// whole (age order); the last level is rewritten in place.
pub(crate) fn pick_cleaning(
    v: &Version,
    busy: &HashSet<u64>,
    dels: &RangeDels,
    range_seq: u64,
) -> Option<Compaction> {
    if dels.is_empty() {
        return None;
    }
    let last = v.levels.len().checked_sub(1)?;
    let free = |c: &Compaction| c.all_tables().all(|t| !busy.contains(&t.id()));
    for level in (0..=last).rev() {
        for t in v.levels[level].iter() {
            if !needs_cleaning(t, dels, range_seq) {
                continue;
            }
            let c = if level == 0 {
                Compaction::down(v, 0, v.levels[0].clone(), None)
            } else if level == last {
                Compaction {
                    level,
                    inputs: vec![t.clone()],
                    next: Vec::new(),
                    out_level: level,
                    bottom: true,
                    drop_prefix: None,
                }
            } else {
                Compaction::down(v, level, vec![t.clone()], None)
            };
            if level == 0 && last == 0 {
                return None;
            }
            if free(&c) {
                return Some(c);
            }
        }
    }
    None
}

/// Flatten's step: all of `level` merged into the next level, if it holds any
/// table (LevelDB's CompactRange beside PickCompaction).
pub(crate) fn whole_level(v: &Version, level: usize) -> Option<Compaction> {
    let inputs = v.levels.get(level)?.clone();
    (!inputs.is_empty()).then(|| Compaction::down(v, level, inputs, None))
}

/// DropPrefix's compactions of `level`: below L0, each table that may hold a
/// key with `prefix` is rewritten in place without those keys; L0 goes down
/// whole into L1 (rewriting one L0 table would change its age order). Run the
/// deepest level first, L0 last: a key's newer versions and tombstones sit
/// above its older ones, so while the drop runs, and after a crash in its
/// middle, each key reads as its value before the drop or as absent, never as
/// an older version a dropped newer one had shadowed.
pub(crate) fn drop_prefix(v: &Version, level: usize, prefix: &[u8]) -> Vec<Compaction> {
    let end = key::prefix_successor(prefix);
    let touches = |t: &Arc<Table>| {
        let (lo, hi) = (key::user_key(t.smallest()), key::user_key(t.largest()));
        hi >= prefix && end.as_ref().is_none_or(|e| lo < e.as_slice())
    };
    let Some(tables) = v.levels.get(level) else {
        return Vec::new();
    };
    if level == 0 {
        if !tables.iter().any(touches) {
            return Vec::new();
        }
        let mut c = Compaction::down(v, 0, tables.clone(), Some(prefix.to_vec()));
        // Tombstones stay: the keys they shadow below are dropped by the
        // deeper levels' rewrites, not here.
        c.bottom = false;
        return vec![c];
    }
    tables
        .iter()
        .filter(|t| touches(t))
        .map(|t| Compaction {
            level,
            inputs: vec![t.clone()],
            next: Vec::new(),
            out_level: level,
            bottom: false,
            drop_prefix: Some(prefix.to_vec()),
        })
        .collect()
}

/// What a compaction may drop, as of its start.
pub(crate) struct At<'a> {
    /// The oldest sequence any reader may still read at.
    pub smallest_snapshot: u64,
    /// Range tombstones at or below this sequence drop what they hide: at
    /// most `smallest_snapshot`, and only durable tombstones.
    pub range_seq: u64,
    /// Unix seconds: decides which entries have expired.
    pub now: u64,
    /// Live range tombstones, read after `smallest_snapshot`: those at or
    /// below it are all there.
    pub range_dels: &'a RangeDels,
}

/// Merges the compaction's tables into new tables of the output level.
/// A version hidden by a range tombstone every reader sees is dropped (its
/// separated value counted as garbage), as is one shadowed by a newer version.
pub(crate) fn run(
    c: &Compaction,
    opts: &Options,
    dir: &Path,
    at: At<'_>,
    keyspace_codecs: &KeyspaceCodecs,
    mut new_id: impl FnMut() -> u64,
) -> Result<Output> {
    let At {
        smallest_snapshot,
        range_seq,
        now,
        range_dels,
    } = at;
    // Newest first: L0 inputs are already newest first, and every input is newer than `next`.
    let sources: Vec<Box<dyn Source>> = c
        .all_tables()
        .map(|t| Box::new(TableIter::streaming(t.clone())) as Box<dyn Source>)
        .collect();
    let mut merge = MergeIter::new(sources, false);
    merge.rewind()?;

    let mut outputs = Vec::new();
    let mut discard: HashMap<u32, u64> = HashMap::new();
    let mut builder: Option<(u64, TableBuilder)> = None;
    let mut cur_user_key: Vec<u8> = Vec::new();
    let mut have_key = false;
    let mut shadowed = false;
    let new_builder = |new_id: &mut dyn FnMut() -> u64| -> Result<(u64, TableBuilder)> {
        let id = new_id();
        let path = filename::table(dir, id);
        let b = TableBuilder::create(
            &opts.fs,
            &path,
            opts.block_size,
            opts.bloom_bits_per_key,
            opts.codec(c.out_level),
        )?
        .with_keyspace_codecs(keyspace_codecs.clone());
        Ok((id, b))
    };
    let result = (|| -> Result<()> {
        while merge.valid() {
            let ikey = merge.key();
            let (uk, seq) = key::split(ikey);
            let new_key = !have_key || uk != cur_user_key.as_slice();
            if new_key {
                // Cut tables only between user keys, so a key's versions share one table.
                if let Some((_, b)) = &builder {
                    if b.estimated_size() >= opts.table_size {
                        if let Some((id, b)) = builder.take() {
                            outputs.push((id, b.finish()?));
                        }
                    }
                }
                cur_user_key.clear();
                cur_user_key.extend_from_slice(uk);
                have_key = true;
                shadowed = false;
            }
            let rec = value::decode(merge.value()).ok_or_else(|| {
                Error::corruption(dir, 0, "undecodable value record met during compaction")
            })?;
            let dropped_by_prefix = c.drop_prefix.as_ref().is_some_and(|p| uk.starts_with(p));
            let mut drop = shadowed || dropped_by_prefix || range_dels.hides(uk, seq, range_seq);
            if !drop && seq <= smallest_snapshot && rec.stored.is_merge() {
                // Every reader sees this operand and what is under it alike:
                // the run folds (see `fold_run`), and older versions are shadowed.
                let (run, end) = collect_run(&mut merge, dir, range_dels, range_seq)?;
                let fold = Fold {
                    operator: opts.merge_operator.as_deref(),
                    bottom: c.bottom,
                    now,
                };
                for (k, v) in fold.run(run, end, &mut discard) {
                    if builder.is_none() {
                        builder = Some(new_builder(&mut new_id)?);
                    }
                    if let Some((_, b)) = builder.as_mut() {
                        b.add(&k, &v)?;
                    }
                }
                shadowed = true;
                continue;
            }
            if !drop && seq <= smallest_snapshot {
                shadowed = true;
                let expired = rec.expired(now);
                drop = c.bottom && (rec.stored == Stored::Delete || expired);
            }
            if drop {
                if let Stored::Pointer(p) = rec.stored {
                    *discard.entry(p.file).or_insert(0) += u64::from(p.len);
                }
                merge.next()?;
                continue;
            }
            if builder.is_none() {
                builder = Some(new_builder(&mut new_id)?);
            }
            if let Some((_, b)) = builder.as_mut() {
                b.add(merge.key(), merge.value())?;
            }
            merge.next()?;
        }
        if let Some((id, b)) = builder.take() {
            if !b.is_empty() {
                outputs.push((id, b.finish()?));
            }
        }
        Ok(())
    })();
    if let Err(e) = result {
        for (id, _) in &outputs {
            let _ = opts.fs.remove(&filename::table(dir, *id));
        }
        if let Some((id, _)) = builder {
            let _ = opts.fs.remove(&filename::table(dir, id));
        }
        return Err(e);
    }
    Ok(Output {
        tables: outputs,
        discard,
    })
}

/// One version of a key in a compaction: internal key, value record.
type Entry = (Vec<u8>, Vec<u8>);

/// The merge's current entry (a merge operand at or below the oldest
/// snapshot) and the versions of its key under it, newest first, down to
/// the first that is not an operand or that a durable range tombstone (at
/// or below `range_seq`) hides (included): the run `Fold::run` folds.
/// Leaves the merge past them.
fn collect_run(
    merge: &mut MergeIter,
    dir: &Path,
    range_dels: &RangeDels,
    range_seq: u64,
) -> Result<(Vec<Entry>, RunEnd)> {
    let first = (merge.key().to_vec(), merge.value().to_vec());
    let uk_len = key::user_key(&first.0).len();
    let mut run = vec![first];
    merge.next()?;
    while merge.valid() {
        let (uk, seq) = key::split(merge.key());
        if uk != &run[0].0[..uk_len] {
            break;
        }
        // Only a durable tombstone (at or below `range_seq`) may end the run
        // as Hidden: folding onto nothing drops the base, and a tombstone
        // still in a memtable may be lost to a power cut.
        let end = if range_dels.hides(uk, seq, range_seq) {
            Some(RunEnd::Hidden)
        } else if !value::is_merge(merge.value()) {
            Some(RunEnd::Base)
        } else {
            None
        };
        if value::decode(merge.value()).is_none() {
            return Err(Error::corruption(
                dir,
                0,
                "undecodable value record met during compaction",
            ));
        }
        run.push((merge.key().to_vec(), merge.value().to_vec()));
        merge.next()?;
        if let Some(end) = end {
            return Ok((run, end));
        }
    }
    Ok((run, RunEnd::Open))
}

/// What ends a run of operands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RunEnd {
    /// Its last entry is a version that is not an operand.
    Base,
    /// Its last entry is hidden from every reader by a range tombstone.
    Hidden,
    /// The key's versions in the compaction's inputs ran out.
    Open,
}

/// How a compaction folds a run of merge operands (see `collect_run`).
struct Fold<'a> {
    operator: Option<&'a dyn crate::merge::MergeOperator>,
    /// No deeper level holds the key: a run with nothing under it is whole.
    bottom: bool,
    now: u64,
}

impl Fold<'_> {
    /// The entries that replace `run` (newest first). A run over a base
    /// that is gone (a tombstone, an expired entry, a range-deleted
    /// version) or over nothing at the bottom level folds into one put; a
    /// run over a put without a TTL folds into it; a run over a value-log
    /// pointer or an expiring put folds into one operand kept above that
    /// base (a base that expires must stay apart: once it does, reads fold
    /// the operands onto nothing); a run with its base in a deeper level
    /// folds into one operand (the operator's associativity contract).
    /// Without an operator, or when the operator refuses the operands,
    /// the run is kept as it is: nothing is lost and the Db goes on.
    fn run(&self, mut run: Vec<Entry>, end: RunEnd, discard: &mut HashMap<u32, u64>) -> Vec<Entry> {
        let Some(operator) = self.operator else {
            return run;
        };
        let top = run[0].0.clone();
        let uk = key::user_key(&top).to_vec();
        let n_ops = match end {
            RunEnd::Open => run.len(),
            RunEnd::Base | RunEnd::Hidden => run.len() - 1,
        };
        let last_rec = match end {
            RunEnd::Open => None,
            RunEnd::Base | RunEnd::Hidden => run.last().and_then(|(_, v)| value::decode(v)),
        };
        let base_rec = last_rec.as_ref().filter(|_| end == RunEnd::Base);
        let live_base = base_rec.filter(|r| !r.expired(self.now));
        // (value to fold onto, user meta, whether the result is a whole
        // value, whether the base entry is kept below one operand).
        let (onto, meta, whole, keep_base) = match live_base.map(|r| (&r.stored, r.expires_at)) {
            Some((Stored::Inline(v), 0)) => (
                Some(v.to_vec()),
                live_base.map_or(0, |r| r.user_meta),
                true,
                false,
            ),
            Some((Stored::Inline(_) | Stored::Pointer(_), _)) => (None, 0, false, true),
            Some((Stored::Delete | Stored::Merge(_), _)) => (None, 0, true, false),
            // Expired, hidden, or nothing under the run.
            None => (None, 0, end != RunEnd::Open || self.bottom, false),
        };
        // Newest first, past the versions a folded operand stands for.
        let mut bound = u64::MAX;
        let mut operands: Vec<&[u8]> = Vec::with_capacity(n_ops);
        for (k, v) in &run[..n_ops] {
            let seq = key::split(k).1;
            if seq >= bound {
                continue;
            }
            if let Some(Stored::Merge(op)) = value::decode(v).map(|r| r.stored) {
                operands.push(op);
                bound = value::next_below(seq, v);
            }
        }
        operands.reverse();
        let top_seq = key::split(&top).1;
        let floor = if bound < top_seq { bound } else { 0 };
        // A whole value folds onto its base (or onto nothing, which is then
        // known); an operand kept above a base, or over one deeper, is a
        // partial merge.
        let folded = if whole {
            crate::merge::fold(operator, &uk, onto.as_deref(), &operands)
        } else {
            crate::merge::combine(operator, &uk, &operands)
        };
        let Ok(folded) = folded else {
            return run;
        };
        let mut rec = Vec::with_capacity(folded.len() + 12);
        if whole {
            value::encode(&mut rec, &Stored::Inline(&folded), meta, 0);
            // The base is gone: its separated value is garbage.
            if let Some(Stored::Pointer(p)) = last_rec.as_ref().map(|r| &r.stored) {
                *discard.entry(p.file).or_insert(0) += u64::from(p.len);
            }
            return vec![(top, rec)];
        }
        value::encode(&mut rec, &Stored::Merge(&folded), 0, floor);
        let kept = if keep_base { run.pop() } else { None };
        let mut out = vec![(top, rec)];
        out.extend(kept);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A table of keys `{prefix}000..{prefix}{n}` written as table `id` in `dir`.
    fn table(dir: &Path, id: u64, prefix: &str, n: u32) -> Arc<Table> {
        let path = filename::table(dir, id);
        let mut b = crate::table::test_builder(&path, 4096);
        for i in 0..n {
            b.add(&key::encode(format!("{prefix}{i:03}").as_bytes(), 1), b"v")
                .unwrap();
        }
        b.finish().unwrap();
        Arc::new(
            Table::open(
                &crate::fs::Fs::real(),
                &path,
                id,
                &crate::table::test_cache(),
            )
            .unwrap(),
        )
    }

    /// A table `id` of key `k`'s versions, newest first: (seq, record).
    fn versions_of_k(dir: &Path, id: u64, recs: &[(u64, Vec<u8>)]) -> Arc<Table> {
        let path = filename::table(dir, id);
        let mut b = crate::table::test_builder(&path, 4096);
        for (seq, rec) in recs {
            b.add(&key::encode(b"k", *seq), rec).unwrap();
        }
        b.finish().unwrap();
        Arc::new(
            Table::open(
                &crate::fs::Fs::real(),
                &path,
                id,
                &crate::table::test_cache(),
            )
            .unwrap(),
        )
    }

    fn rec(stored: Stored<'_>, expires_at: u64) -> Vec<u8> {
        let mut v = Vec::new();
        value::encode(&mut v, &stored, 0, expires_at);
        v
    }

    /// Compacts `recs` (one table, alone: `bottom` says whether deeper
    /// levels may hold the key) at `smallest_snapshot` with `operator`;
    /// returns the output's (seq, decoded stored, floor).
    fn fold_once(
        recs: &[(u64, Vec<u8>)],
        smallest_snapshot: u64,
        bottom: bool,
        operator: Option<Arc<dyn crate::merge::MergeOperator>>,
    ) -> Vec<(u64, String, u64)> {
        let dir = tempfile::tempdir().unwrap();
        let mut opts = Options::new(dir.path());
        opts.merge_operator = operator;
        let c = Compaction {
            level: 1,
            inputs: vec![versions_of_k(dir.path(), 1, recs)],
            next: Vec::new(),
            out_level: 2,
            bottom,
            drop_prefix: None,
        };
        let dels = RangeDels::default();
        let at = At {
            smallest_snapshot,
            range_seq: smallest_snapshot,
            now: 1,
            range_dels: &dels,
        };
        let mut id = 10;
        let out = run(
            &c,
            &opts,
            dir.path(),
            at,
            &KeyspaceCodecs::default(),
            || {
                id += 1;
                id
            },
        )
        .unwrap();
        let mut got = Vec::new();
        for (id, _) in out.tables {
            let path = filename::table(dir.path(), id);
            let t = Arc::new(
                Table::open(
                    &crate::fs::Fs::real(),
                    &path,
                    id,
                    &crate::table::test_cache(),
                )
                .unwrap(),
            );
            let mut it = TableIter::streaming(t);
            it.rewind().unwrap();
            while it.valid() {
                let r = value::decode(it.value()).unwrap();
                let shown = match r.stored {
                    Stored::Inline(v) => format!("put {}", String::from_utf8_lossy(v)),
                    Stored::Merge(v) => format!("op {}", String::from_utf8_lossy(v)),
                    Stored::Pointer(p) => format!("ptr {}", p.offset),
                    Stored::Delete => "del".into(),
                };
                got.push((key::split(it.key()).1, shown, r.merge_floor()));
                it.next().unwrap();
            }
        }
        got
    }

    #[test]
    fn compaction_folds_operands_below_the_oldest_snapshot_and_keeps_the_ones_above() {
        let append: Option<Arc<dyn crate::merge::MergeOperator>> =
            Some(Arc::new(crate::merge::Append));
        let ptr = crate::value::ValuePointer {
            file: 1,
            offset: 77,
            len: 10,
        };
        let recs = vec![
            (5, rec(Stored::Merge(b"d"), 0)),
            (4, rec(Stored::Merge(b"c"), 0)),
            (3, rec(Stored::Merge(b"b"), 0)),
            (2, rec(Stored::Inline(b"a"), 0)),
            (1, rec(Stored::Inline(b"old"), 0)),
        ];
        // Snapshot at 3: 5 and 4 stay apart, 3 folds onto its base.
        let got = fold_once(&recs, 3, false, append.clone());
        let want = [
            (5, "op d".to_string(), 0),
            (4, "op c".to_string(), 0),
            (3, "put ab".to_string(), 0),
        ];
        assert_eq!(got, want);
        // Over a separated base: one operand above it, with its floor.
        let mut over_ptr = recs[..3].to_vec();
        over_ptr.push((2, rec(Stored::Pointer(ptr), 0)));
        let got = fold_once(&over_ptr, 9, false, append.clone());
        let want = [(5, "op bcd".to_string(), 3), (2, "ptr 77".to_string(), 0)];
        assert_eq!(got, want);
        // Nothing below in the inputs: an operand unless at the bottom.
        let got = fold_once(&recs[..3], 9, false, append.clone());
        assert_eq!(got, [(5, "op bcd".to_string(), 3)]);
        let got = fold_once(&recs[..3], 9, true, append.clone());
        assert_eq!(got, [(5, "put bcd".to_string(), 0)]);
        // A tombstone under them: a whole value.
        let mut over_del = recs[..2].to_vec();
        over_del.push((3, rec(Stored::Delete, 0)));
        let got = fold_once(&over_del, 9, false, append);
        assert_eq!(got, [(5, "put cd".to_string(), 0)]);
        // Without an operator, every version down to the base stays.
        let got = fold_once(&recs, 9, false, None);
        assert_eq!(got.len(), 4, "{got:?}");
    }

    #[test]
    fn due_levels_follow_l0_count_and_level_size_and_skip_the_last_level() {
        let dir = tempfile::tempdir().unwrap();
        let mut opts = Options::new(dir.path());
        opts.l0_compaction_trigger = 2;
        opts.level_base_size = 1 << 30;
        let none = HashSet::new();
        let v = Version::new(3).apply(&none, &[(0, table(dir.path(), 1, "a", 10))]);
        assert!(
            due(&v, &opts, false).is_empty(),
            "one L0 table of a trigger of 2"
        );

        let v = v.apply(&none, &[(0, table(dir.path(), 2, "b", 10))]);
        assert_eq!(due(&v, &opts, false), vec![0]);

        // L1 far over its target outranks L0 at its trigger; the last level
        // (L2) is over any target too but has nowhere to go.
        let l1 = table(dir.path(), 3, "c", 100);
        opts.level_base_size = l1.size() / 10;
        let v = v.apply(&none, &[(1, l1), (2, table(dir.path(), 4, "d", 1000))]);
        assert_eq!(due(&v, &opts, false), vec![1, 0]);
        let picked = pick(&v, &opts, &none, &mut vec![Vec::new(); 3], false).unwrap();
        assert_eq!(picked.level, 1, "pick follows the same order");
    }

    #[test]
    fn static_level_targets_grow_by_the_multiplier_and_saturate() {
        let mut opts = Options::new("unused");
        opts.level_dynamic = false;
        opts.level_base_size = 10;
        opts.level_multiplier = 10;
        let s = Shape::of(&Version::new(6), &opts);
        assert_eq!(s.base, 1);
        assert_eq!(s.targets, vec![0, 10, 100, 1000, 10_000, 0]);
        opts.level_base_size = u64::MAX / 2;
        assert_eq!(Shape::of(&Version::new(6), &opts).targets[4], u64::MAX);
    }

    #[test]
    fn dynamic_sizing_sends_l0_to_the_last_level_of_a_small_tree_and_moves_the_base_up_as_it_grows()
    {
        let dir = tempfile::tempdir().unwrap();
        let mut opts = Options::new(dir.path());
        opts.level_dynamic = true;
        opts.level_multiplier = 10;
        opts.l0_compaction_trigger = 2;
        let none = HashSet::new();
        let big = table(dir.path(), 10, "m", 1000);
        opts.level_base_size = big.size() / 5;
        let l0 = [
            (0, table(dir.path(), 1, "a", 10)),
            (0, table(dir.path(), 2, "b", 10)),
        ];
        // Nothing below L0: it goes straight into the last level.
        let v = Version::new(5).apply(&none, &l0);
        let s = Shape::of(&v, &opts);
        assert_eq!(s.base, 4);
        assert!(s.targets.iter().all(|&t| t == 0), "{s:?}");
        let c = pick(&v, &opts, &none, &mut vec![Vec::new(); 5], false).unwrap();
        assert_eq!((c.level, c.out_level, c.bottom), (0, 4, true));

        // The last level past level_base_size: the base moves up a level and
        // targets a tenth of it; L0 goes there.
        let v = v.apply(&none, &[(4, big.clone())]);
        let s = Shape::of(&v, &opts);
        assert_eq!((s.base, s.targets[3]), (3, big.size() / 10));
        let c = pick(&v, &opts, &none, &mut vec![Vec::new(); 5], false).unwrap();
        assert_eq!((c.level, c.out_level), (0, 3));

        // A table in L2 keeps the base at L2 at most: L0 never skips a level
        // that holds data. Its target is at least level_base_size / 10.
        let v2 = v.apply(&none, &[(2, table(dir.path(), 11, "z", 10))]);
        let s = Shape::of(&v2, &opts);
        assert_eq!((s.base, s.targets[2]), (2, opts.level_base_size / 10));
        let c = pick(&v2, &opts, &none, &mut vec![Vec::new(); 5], false).unwrap();
        assert_eq!(c.out_level, 2);

        // Static sizing keeps L1 as the base whatever the tree holds.
        opts.level_dynamic = false;
        assert_eq!(Shape::of(&v, &opts).base, 1);
    }

    /// L1 over its target with three tables (`a`, `b`, `c`), L2 holding `b`.
    fn crowded_l1(dir: &Path) -> (Version, Options) {
        let mut opts = Options::new(dir);
        opts.level_base_size = 1;
        let none = HashSet::new();
        let v = Version::new(4).apply(
            &none,
            &[
                (1, table(dir, 1, "a", 10)),
                (1, table(dir, 2, "b", 10)),
                (1, table(dir, 3, "c", 10)),
                (2, table(dir, 4, "b", 20)),
            ],
        );
        (v, opts)
    }

    fn ids(tables: &[Arc<Table>]) -> Vec<u64> {
        tables.iter().map(|t| t.id()).collect()
    }

    #[test]
    fn tables_without_overlap_below_go_first_in_turns_through_the_key_space() {
        let dir = tempfile::tempdir().unwrap();
        let (v, opts) = crowded_l1(dir.path());
        let mut cursors = vec![Vec::new(); 4];
        let none = HashSet::new();
        let order: Vec<u64> = (0..4)
            .map(|_| pick(&v, &opts, &none, &mut cursors, false).unwrap().inputs[0].id())
            .collect();
        // Table 2 overlaps table 4 in L2; 1 and 3 move down without a rewrite.
        assert_eq!(order, vec![1, 3, 1, 3]);
    }

    #[test]
    fn a_level_gives_the_table_with_the_least_overlap_below_per_byte() {
        let dir = tempfile::tempdir().unwrap();
        let mut opts = Options::new(dir.path());
        opts.level_base_size = 1;
        let none = HashSet::new();
        // L1: a, b, c of equal size; below them 100, 40 and 5 keys.
        let v = Version::new(4).apply(
            &none,
            &[
                (1, table(dir.path(), 1, "a", 10)),
                (1, table(dir.path(), 2, "b", 10)),
                (1, table(dir.path(), 3, "c", 10)),
                (2, table(dir.path(), 4, "a", 100)),
                (2, table(dir.path(), 5, "b", 40)),
                (2, table(dir.path(), 6, "c", 5)),
            ],
        );
        let mut cursors = vec![Vec::new(); 4];
        let c = pick(&v, &opts, &none, &mut cursors, false).unwrap();
        assert_eq!((ids(&c.inputs), ids(&c.next)), (vec![3], vec![6]));
        // With c's overlap busy, b (the next smallest) goes, not a.
        let busy: HashSet<u64> = [6].into();
        let c = pick(&v, &opts, &busy, &mut cursors, false).unwrap();
        assert_eq!((ids(&c.inputs), ids(&c.next)), (vec![2], vec![5]));
    }

    #[test]
    fn a_table_with_no_overlap_below_moves_down_without_a_rewrite() {
        let dir = tempfile::tempdir().unwrap();
        let (v, opts) = crowded_l1(dir.path());
        let c = pick(&v, &opts, &HashSet::new(), &mut vec![Vec::new(); 4], false).unwrap();
        assert_eq!((ids(&c.inputs), ids(&c.next)), (vec![1], vec![]));
        assert!(c.is_trivial_move() && c.bottom);
    }

    #[test]
    fn busy_inputs_and_busy_overlaps_are_skipped_for_the_next_free_table() {
        let dir = tempfile::tempdir().unwrap();
        let (v, opts) = crowded_l1(dir.path());
        let mut cursors = vec![Vec::new(); 4];
        // Table 1 is busy itself; table 2's overlap in L2 (table 4) is busy.
        let busy: HashSet<u64> = [1, 4].into();
        let c = pick(&v, &opts, &busy, &mut cursors, false).unwrap();
        assert_eq!(ids(&c.inputs), vec![3]);
        let busy: HashSet<u64> = [1, 3].into();
        let c = pick(&v, &opts, &busy, &mut cursors, false).unwrap();
        assert_eq!((ids(&c.inputs), ids(&c.next)), (vec![2], vec![4]));
        assert!(!c.is_trivial_move());
        // L2 is over its target too: with L1 all busy, its table goes.
        let l1: HashSet<u64> = [1, 2, 3].into();
        let c = pick(&v, &opts, &l1, &mut cursors, false).unwrap();
        assert_eq!((c.level, ids(&c.inputs)), (2, vec![4]));
        let all: HashSet<u64> = [1, 2, 3, 4].into();
        assert!(pick(&v, &opts, &all, &mut cursors, false).is_none());
    }

    #[test]
    fn flatten_takes_a_whole_level_with_its_overlaps_and_skips_empty_levels() {
        let dir = tempfile::tempdir().unwrap();
        let (v, _) = crowded_l1(dir.path());
        assert!(whole_level(&v, 0).is_none());
        let c = whole_level(&v, 1).unwrap();
        assert_eq!((ids(&c.inputs), ids(&c.next)), (vec![1, 2, 3], vec![4]));
        assert_eq!(c.out_level, 2);
    }

    #[test]
    fn drop_prefix_rewrites_in_place_only_the_tables_that_may_hold_the_prefix() {
        let dir = tempfile::tempdir().unwrap();
        let (v, _) = crowded_l1(dir.path());
        let cs = drop_prefix(&v, 1, b"b");
        assert_eq!(cs.len(), 1);
        assert_eq!((ids(&cs[0].inputs), cs[0].out_level), (vec![2], 1));
        assert!(cs[0].next.is_empty() && !cs[0].bottom);
        assert!(drop_prefix(&v, 1, b"z").is_empty());
        assert!(drop_prefix(&v, 0, b"b").is_empty(), "L0 is empty");

        let none = HashSet::new();
        let v = v.apply(&none, &[(0, table(dir.path(), 5, "b00", 3))]);
        let cs = drop_prefix(&v, 0, b"b");
        assert_eq!(cs.len(), 1);
        assert_eq!((ids(&cs[0].inputs), ids(&cs[0].next)), (vec![5], vec![2]));
        assert_eq!(cs[0].out_level, 1);
    }

    /// A table of `(key, seq, value record)` entries, given in internal-key order.
    fn versions(dir: &Path, id: u64, entries: &[(&[u8], u64, Vec<u8>)]) -> Arc<Table> {
        let path = filename::table(dir, id);
        let mut b = crate::table::test_builder(&path, 4096);
        for (k, seq, v) in entries {
            b.add(&key::encode(k, *seq), v).unwrap();
        }
        b.finish().unwrap();
        Arc::new(
            Table::open(
                &crate::fs::Fs::real(),
                &path,
                id,
                &crate::table::test_cache(),
            )
            .unwrap(),
        )
    }

    fn pointer(file: u32, len: u32) -> Vec<u8> {
        let mut v = Vec::new();
        let p = crate::value::ValuePointer {
            file,
            offset: 0,
            len,
        };
        value::encode(&mut v, &Stored::Pointer(p), 0, 0);
        v
    }

    /// (user key, seq) of every entry of the output tables.
    fn output_entries(dir: &Path, out: &Output) -> Vec<(Vec<u8>, u64)> {
        let mut all = Vec::new();
        for (id, _) in &out.tables {
            let t = Arc::new(
                Table::open(
                    &crate::fs::Fs::real(),
                    &filename::table(dir, *id),
                    *id,
                    &crate::table::test_cache(),
                )
                .unwrap(),
            );
            let mut it = TableIter::streaming(t);
            it.rewind().unwrap();
            while it.valid() {
                let (k, seq) = key::split(it.key());
                all.push((k.to_vec(), seq));
                it.next().unwrap();
            }
        }
        all
    }

    #[test]
    fn a_tombstone_not_yet_durable_does_not_fold_operands_onto_nothing() {
        // k079@1 = "k079:105" (the base), k079@18 += "k079:" (an operand),
        // and [k071, k089) at 28 still in a memtable: range_seq 27 < 28 <=
        // snapshot 29. The power cut may lose the tombstone: the base must
        // stay folded under the operand, not be dropped.
        let dir = tempfile::tempdir().unwrap();
        let mut opts = Options::new(dir.path());
        opts.merge_operator = Some(Arc::new(crate::merge::Append));
        let t = versions(
            dir.path(),
            1,
            &[
                (b"k079", 18, rec(Stored::Merge(b"k079:"), 0)),
                (b"k079", 1, rec(Stored::Inline(b"k079:105"), 0)),
            ],
        );
        let dels = RangeDels::new([crate::range_del::RangeTombstone {
            start: b"k071".to_vec(),
            end: b"k089".to_vec(),
            seq: 28,
        }]);
        let c = Compaction {
            level: 1,
            inputs: vec![t],
            next: Vec::new(),
            out_level: 2,
            bottom: true,
            drop_prefix: None,
        };
        let at = At {
            smallest_snapshot: 29,
            range_seq: 27,
            now: 1,
            range_dels: &dels,
        };
        let out = run(&c, &opts, dir.path(), at, &Default::default(), || 11).unwrap();
        let (id, _) = &out.tables[0];
        let t = Arc::new(
            Table::open(
                &crate::fs::Fs::real(),
                &filename::table(dir.path(), *id),
                *id,
                &crate::table::test_cache(),
            )
            .unwrap(),
        );
        let mut it = TableIter::streaming(t);
        it.rewind().unwrap();
        let r = value::decode(it.value()).unwrap();
        assert_eq!(r.stored, Stored::Inline(b"k079:105k079:"));
    }

    #[test]
    fn compaction_drops_versions_a_visible_range_tombstone_hides_and_counts_their_values() {
        let dir = tempfile::tempdir().unwrap();
        let opts = Options::new(dir.path());
        // The tombstone: [b, f) at 6. Newer table: b@7 and e@8 (after it),
        // c2@6 (in its own batch). Older: a@2 and g@1 (outside), c@4 and d@5
        // (hidden: nothing newer shadows them).
        let newer = versions(
            dir.path(),
            1,
            &[
                (b"b", 7, pointer(9, 100)),
                (b"c2", 6, pointer(9, 10)),
                (b"e", 8, pointer(9, 1)),
            ],
        );
        let older = versions(
            dir.path(),
            2,
            &[
                (b"a", 2, pointer(8, 1)),
                (b"c", 4, pointer(8, 300)),
                (b"d", 5, pointer(8, 4000)),
                (b"g", 1, pointer(8, 50000)),
            ],
        );
        let dels = RangeDels::new([crate::range_del::RangeTombstone {
            start: b"b".to_vec(),
            end: b"f".to_vec(),
            seq: 6,
        }]);
        let c = Compaction {
            level: 0,
            inputs: vec![newer, older],
            next: Vec::new(),
            out_level: 1,
            bottom: true,
            drop_prefix: None,
        };
        let mut next_id = 10;
        let mut run_at = |snapshot| {
            let at = At {
                smallest_snapshot: snapshot,
                range_seq: snapshot,
                now: 0,
                range_dels: &dels,
            };
            next_id += 1;
            let id = next_id;
            run(&c, &opts, dir.path(), at, &Default::default(), || id).unwrap()
        };
        let out = run_at(10);
        let kept = output_entries(dir.path(), &out);
        let want: Vec<(Vec<u8>, u64)> = vec![
            (b"a".to_vec(), 2),
            (b"b".to_vec(), 7),
            (b"c2".to_vec(), 6),
            (b"e".to_vec(), 8),
            (b"g".to_vec(), 1),
        ];
        assert_eq!(kept, want);
        assert_eq!(out.discard.get(&8), Some(&4300), "c@4 and d@5 are garbage");
        assert_eq!(out.discard.get(&9), None);
        // A reader older than the tombstone keeps every version.
        let out = run_at(5);
        assert_eq!(output_entries(dir.path(), &out).len(), 7);
        assert!(out.discard.is_empty());
    }

    #[test]
    fn an_idle_db_merges_any_l0_table_down_and_a_busy_one_waits_for_the_trigger() {
        let dir = tempfile::tempdir().unwrap();
        let mut opts = Options::new(dir.path());
        opts.l0_compaction_trigger = 4;
        let none = HashSet::new();
        let v = Version::new(3).apply(&none, &[(0, table(dir.path(), 1, "a", 10))]);
        assert!(due(&v, &opts, false).is_empty());
        assert_eq!(due(&v, &opts, true), vec![0]);
        let c = pick(&v, &opts, &none, &mut vec![Vec::new(); 3], true).unwrap();
        assert_eq!((c.level, ids(&c.inputs), c.out_level), (0, vec![1], 1));
        // Nothing in L0: idle or not, nothing to do.
        assert!(due(&Version::new(3), &opts, true).is_empty());
    }
}
