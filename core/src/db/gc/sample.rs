//! Sampling: garbage shares of sealed files estimated by looking up a
//! few of their entries, for what no compaction has counted yet.

use super::*;

/// Garbage shares of sealed value-log files estimated by sampling: what a
/// file holds that no compaction or flush has counted yet (versions shadowed
/// by newer ones still in memtables or in L0 above them).
#[derive(Default)]
pub(crate) struct Samples {
    pub(super) files: HashMap<u32, Sample>,
    /// The entries each sealed file's samples look up, found by walking it
    /// once: a sealed file never changes, and walking it again for every
    /// sample read every entry header of each stale file (at 1 KiB values
    /// about 60 µs per 16 MiB file hot, a read of the file back when cold,
    /// 50-250 ms a round under load). Kept for files whose sampled keys
    /// total at most `SAMPLE_KEYS_KEPT` bytes.
    pub(super) entries: HashMap<u32, SampledEntries>,
    /// Bytes of files that may still be sampled (`GcState::resample`).
    pub(super) credit: u64,
    /// `GcEnv::vlog_appended` when `credit` was last topped up.
    pub(super) credited_at: u64,
    /// The idle tier's last walk over the tree (`walk`), while no write
    /// came after it.
    pub(super) walked: Option<Walked>,
    /// Files found to hold a damaged live entry: they stay, and no round
    /// picks them again while the Db is open (each would meet the same
    /// damage and hold back the files behind it). `verify` reports them.
    pub(super) damaged: HashSet<u32>,
}

/// The (pointer, key) of each entry a file's samples look up.
pub(super) type SampledEntries = Arc<Vec<(ValuePointer, Vec<u8>)>>;

#[derive(Clone, Copy)]
pub(super) struct Sample {
    pub(super) share: f64,
    /// Value-log bytes appended when it was taken (`GcEnv::vlog_appended`).
    pub(super) at: u64,
}

impl GcState {
    /// The estimated garbage share of sealed file `f`: what compactions and
    /// flushes counted, or its last sample's estimate if higher.
    pub(super) fn estimated_share(
        &self,
        discard: &BTreeMap<u32, u64>,
        f: &VlogFile,
    ) -> Result<f64> {
        let counted = garbage_share(discard, f)?;
        let sampled = lock(&self.samples)
            .files
            .get(&f.id())
            .map_or(0.0, |s| s.share);
        Ok(counted.max(sampled))
    }

    /// Samples again the sealed `files` whose counted garbage is below
    /// `ratio` and whose last sample is older than a `RESAMPLE_PER_HEAD`th of
    /// a head file's worth of appends, stalest first, within a budget of
    /// `SAMPLE_LOOKUPS_PER_KIB` lookups per KiB appended (so sampling costs a
    /// bounded share of the write work, however small and many the files; a
    /// file never sampled is sampled free). Samples of files gone are forgotten.
    pub(super) fn resample<E: GcEnv>(
        &self,
        env: &E,
        files: &[Arc<VlogFile>],
        discard: &BTreeMap<u32, u64>,
        ratio: f64,
        appended: u64,
        trace: &mut Trace,
    ) -> Result<()> {
        let period = self.head_target() / RESAMPLE_PER_HEAD;
        let mut stale = Vec::new();
        let mut total = 0u64;
        {
            let mut samples = lock(&self.samples);
            samples
                .files
                .retain(|id, _| files.iter().any(|f| f.id() == *id));
            samples
                .entries
                .retain(|id, _| files.iter().any(|f| f.id() == *id));
            for f in files {
                let count = sample_count(f.len()?);
                total += count;
                let age = samples
                    .files
                    .get(&f.id())
                    .map_or(u64::MAX, |s| appended.saturating_sub(s.at));
                if age >= period && garbage_share(discard, f)? < ratio {
                    stale.push((age, count, f.clone()));
                }
            }
            let new = appended.saturating_sub(samples.credited_at);
            samples.credited_at = appended;
            samples.credit = samples
                .credit
                .saturating_add(new.saturating_mul(SAMPLE_LOOKUPS_PER_KIB) >> 10)
                .min(total);
        }
        stale.sort_by_key(|s| std::cmp::Reverse(s.0));
        for (age, count, f) in stale {
            {
                let mut samples = lock(&self.samples);
                if age != u64::MAX {
                    if samples.credit < count {
                        break;
                    }
                    samples.credit -= count;
                }
            }
            let share = self.sample_share(env, &f, count)?;
            trace.sampled_files += 1;
            trace.sampled_entries += count;
            lock(&self.samples).files.insert(
                f.id(),
                Sample {
                    share,
                    at: appended,
                },
            );
        }
        Ok(())
    }

    /// Marks the sealed files that were there at open as sampled (at their
    /// counted garbage), so that they are sampled again only as writes pay
    /// for it (`resample`'s credit), not all at once for free: otherwise a
    /// reopened Db that only reads would walk its whole value log beside its
    /// readers and slow them (see docs/gc-pacing.md).
    pub(super) fn defer_samples_of_files_from_before_open<E: GcEnv>(&self, env: &E) {
        let st = env.read_state();
        let head = env.head_vlog();
        let appended = env.vlog_appended();
        let mut samples = lock(&self.samples);
        for f in st.vlogs.all().filter(|f| f.id() < head) {
            samples.files.entry(f.id()).or_insert(Sample {
                share: 0.0,
                at: appended,
            });
        }
    }

    /// The share of `count` entries of `f` (spread over its bytes)
    /// that a lookup finds shadowed, deleted or expired.
    pub(super) fn sample_share<E: GcEnv>(&self, env: &E, f: &VlogFile, count: u64) -> Result<f64> {
        let kept = lock(&self.samples).entries.get(&f.id()).cloned();
        let sampled = match kept {
            Some(entries) => entries,
            None => {
                let entries = Arc::new(f.sample_entries(count)?);
                let key_bytes: usize = entries.iter().map(|(_, k)| k.len()).sum();
                if key_bytes <= SAMPLE_KEYS_KEPT {
                    lock(&self.samples).entries.insert(f.id(), entries.clone());
                }
                entries
            }
        };
        if sampled.is_empty() {
            return Ok(0.0);
        }
        let st = env.read_state();
        let now = env.now();
        let mut dead = 0usize;
        for (ptr, key) in sampled.iter() {
            let live = st
                .lookup(key, crate::key::MAX_SEQ)?
                .is_some_and(|(_, raw)| {
                    value::decode(&raw)
                        .is_some_and(|rec| rec.stored == Stored::Pointer(*ptr) && !rec.expired(now))
                });
            dead += usize::from(!live);
        }
        Ok(dead as f64 / sampled.len() as f64)
    }
}
