package stores

import (
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"

	sett "github.com/sett-db/sett-go"
)

type settStore struct {
	db   *sett.DB
	name string
}

// BenchEncryptionKey is the master key of the sett-enc engine: a fixed,
// public key, so that every run opens the data sets of earlier phases. It
// protects nothing; it makes sett encrypt every file as a user's key would.
var BenchEncryptionKey = []byte("sett-enc benchmark key, public!!")

// settEncSettings is what sett-enc adds to sett's settings, for the reports.
const settEncSettings = "; encryption at rest on (AES-256-CTR on every file, a fixed benchmark master key, data keys rotated at the default 10 days: " +
	"never within a run); everything else as sett, so that the two rows show what encryption costs"

// settSettings is what openSett sets, for the reports.
func settSettings(o Options) string {
	threshold := ValueThreshold
	if o.ValueThreshold > 0 {
		threshold = o.ValueThreshold
	}
	return fmt.Sprintf("sett %s through its C ABI: value threshold %d B; cache_size = the memory budget (table indexes and bloom filters, 10 bits/key, "+
		"pinned while they fit in half of it, and data blocks, read into it by positional reads as RocksDB's); values are read from the "+
		"value log by positional reads (no read-ahead), scans of it through mappings with explicit read-ahead; 4 KiB blocks; %s; "+
		"16 MiB memtables, L0 compactions at 64 tables, writes slowed at 96 and stopped at 128 (defaults); %d compaction thread(s), "+
		"what RocksDB's IncreaseParallelism(cores) gives its compactions (its flushes get a quarter of the jobs, sett's flush has a thread of its own); background value-log GC at its defaults (files with half their bytes garbage, "+
		"up to 64 MiB/s, or 4x the append rate while writes run), "+
		"whose backlog a read phase waits for as it waits for compactions; close flushes the memtables and syncs%s", settLibVersion(), threshold, codecSetting(o),
		compactionThreads(), overlaySetting(o))
}

// overlaySetting names the options a run laid over these (Options.SettOptions).
func overlaySetting(o Options) string {
	if o.SettOptions == "" {
		return ""
	}
	return "; then these sett.Options fields, overriding what this line says: " + o.SettOptions
}

// codecSetting says how table blocks are compressed, for the reports.
func codecSetting(o Options) string {
	if o.Compression == "" || o.Compression == "none" {
		return "no compression"
	}
	if o.Compression == "zstd" {
		return "zstd compression (level 3) of table data blocks on every level"
	}
	return o.Compression + " compression of table data blocks on every level"
}

// compactionThreads is what RocksDB's IncreaseParallelism(cores) leaves its
// compactions: max_background_jobs = cores, of which a quarter (at least one)
// flush. sett's flush has a thread of its own, so both engines may run as many
// compactions at once on any machine (one on two cores, sett's default;
// RocksDB runs more than one only while it falls behind).
func compactionThreads() int {
	cores := runtime.NumCPU()
	return max(1, cores-max(1, cores/4))
}

func settLibVersion() string {
	v := sett.Version()
	return fmt.Sprintf("%d.%d.%d", v/10000, v/100%100, v%100)
}

// openSett opens sett in dir; encrypted opens it with BenchEncryptionKey
// (the sett-enc engine) and nothing else different.
func openSett(dir string, o Options, encrypted bool) (Store, error) {
	if err := CheckCompression(o.Compression); err != nil {
		return nil, err
	}
	threshold := ValueThreshold
	if o.ValueThreshold > 0 {
		threshold = o.ValueThreshold
	}
	codec := map[string]sett.Compression{"lz4": sett.CompressionLZ4, "zstd": sett.CompressionZSTD}[o.Compression]
	so := &sett.Options{ValueThreshold: threshold, SyncWrites: o.Sync, ReadOnly: o.ReadOnly, Compression: codec, CacheSize: o.CacheBytes,
		NumCompactors: compactionThreads()}
	name := "sett"
	if encrypted {
		so.EncryptionKey, name = BenchEncryptionKey, "sett-enc"
	}
	if err := overlaySettOptions(so, o.SettOptions); err != nil {
		return nil, err
	}
	db, err := sett.Open(dir, so)
	if err != nil {
		return nil, err
	}
	return &settStore{db: db, name: name}, nil
}

func (s *settStore) Name() string { return s.name }

func (s *settStore) WriteBatch(keys, vals [][]byte) error {
	b := s.db.NewBatch()
	for i := range keys {
		if err := b.Set(keys[i], vals[i]); err != nil {
			b.Discard()
			return err
		}
	}
	return b.Commit()
}

func (s *settStore) Get(key, dst []byte) ([]byte, error) {
	v, err := s.db.GetInto(key, dst)
	if errors.Is(err, sett.ErrNotFound) {
		return nil, ErrNotFound
	}
	return v, err
}

// MultiGet is sett's get_many: one cgo crossing for the batch, the lookups at
// one read point, the batch's reads asked for together once one waits on the
// device. The values are lent to fn (MultiGetFunc), as RocksDB's pinned
// slices are.
func (s *settStore) MultiGet(keys [][]byte, fn func(i int, v []byte)) error {
	return s.db.MultiGetFunc(keys, fn)
}

func (s *settStore) Iterate(keysOnly bool, limit int, fn func(k, v []byte) bool) (int, error) {
	return s.scan(sett.IteratorOptions{KeysOnly: keysOnly}, limit, fn)
}

// scan walks an iterator with opts, at most limit items.
func (s *settStore) scan(opts sett.IteratorOptions, limit int, fn func(k, v []byte) bool) (int, error) {
	it, err := s.db.NewIterator(opts)
	if err != nil {
		return 0, err
	}
	defer it.Close()
	n := 0
	for ; it.Valid() && n < limit; it.Next() {
		n++
		if !fn(it.Key(), it.Value()) {
			break
		}
	}
	return n, it.Err()
}

// Backlog reads sett's stats: memtables waiting for a flush, levels due for
// compaction, compactions running, and value-log files due for the background
// GC (sett's compaction of values: left running, it would read and rewrite
// through the read phase, as RocksDB's compactions would if not waited for).
func (s *settStore) Backlog() (bool, string, error) {
	st, err := s.db.Stats()
	if err != nil {
		return false, "", err
	}
	idle := st.ImmutableMemtables == 0 && st.CompactionsPending == 0 && st.CompactionsRunning == 0 &&
		st.GCPendingFiles == 0
	desc := fmt.Sprintf("immutable memtables=%d compactions pending=%d running=%d tables per level=%v gc pending=%d files (%d bytes)",
		st.ImmutableMemtables, st.CompactionsPending, st.CompactionsRunning, st.LevelTables, st.GCPendingFiles, st.GCPendingBytes)
	return idle, desc, nil
}

// WriteAccount is sett's count of what it wrote since open (Stats): the WAL,
// the tables written into each level (flushes into L0, compactions below),
// what those compactions read, and the values the GC moved.
func (s *settStore) WriteAccount() (string, error) {
	st, err := s.db.Stats()
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("MiB since open: WAL %.0f; tables written per level %v; read by compactions into each level %v; "+
		"value log %.0f live (moved by GC %.0f); bytes per level now %v",
		mibOf(st.WALBytesWritten), mibsOf(st.LevelBytesWritten), mibsOf(st.LevelBytesRead),
		mibOf(st.VlogBytes), mibOf(st.GCBytesMoved), mibsOf(st.LevelBytes)), nil
}

func mibOf(b uint64) float64 { return float64(b) / (1 << 20) }

// mibsOf rounds each count of bytes to whole MiB, for a log line.
func mibsOf(bs []uint64) []uint64 {
	out := make([]uint64, len(bs))
	for i, b := range bs {
		out[i] = (b + 1<<19) >> 20
	}
	return out
}

func (s *settStore) Close() error { return s.db.Close() }

// overlaySettOptions sets the fields that js (Options.SettOptions) names on
// so. A name sett.Options does not have, or a value of the wrong type, is an
// error: a screen that silently ran the defaults would mislead.
func overlaySettOptions(so *sett.Options, js string) error {
	if js == "" {
		return nil
	}
	dec := json.NewDecoder(strings.NewReader(js))
	dec.DisallowUnknownFields()
	if err := dec.Decode(so); err != nil {
		return fmt.Errorf("sett options %s: %w", js, err)
	}
	if dec.More() {
		return fmt.Errorf("sett options %s: more than one JSON object", js)
	}
	return nil
}
