#ifndef SETT_H
#define SETT_H

#include <stddef.h>
#include <stdint.h>
/*
 * sett — an embedded key-value store (LSM tree with a value log).
 *
 * Conventions of this header:
 * - Every fallible function returns an int status: SETT_OK (0) or one of the
 *   SETT_* codes below. Most take a last `sett_error_t **err`: when not NULL and
 *   the call fails (other than SETT_NOT_FOUND), *err receives an error with a
 *   message, owned by the caller and freed with sett_error_free(). *err must be
 *   NULL or hold an earlier error on entry (an earlier error is freed first).
 *   There is no thread-local "last error".
 * - Bytes are a pointer plus a length; a NULL pointer is allowed with length 0.
 *   Keys must not be empty.
 * - Values returned in a sett_buf_t are owned by the caller: free them with
 *   sett_buf_free(). sett_get_into() copies into a caller buffer instead.
 * - Every handle has a *_free (or sett_close + sett_db_free) that accepts NULL.
 * - Thread safety: a sett_db_t and a sett_keyspace_t may be used from many
 *   threads at once. A sett_txn_t, sett_iter_t, sett_batch_t, sett_options_t,
 *   sett_iter_options_t or sett_keyspace_options_t must be used by one
 *   thread at a time (it may move
 *   between threads, as goroutines do). sett_sequence_t is thread-safe.
 * - A panic inside sett is caught and returned as SETT_PANIC.
 * - Extensible structs (sett_stats_ex_t, sett_verify_report_t,
 *   sett_checkpoint_report_t) are allocated by
 *   the caller and start with `size_t size`. Set it to sizeof(the struct) as
 *   your sett.h declares it before the call; a smaller value than the struct's
 *   first version is SETT_INVALID_ARGUMENT. sett fills the fields it knows that
 *   fit in `size`, zeroes any bytes past them (fields of a newer header than
 *   the library) and sets `size` to the number of bytes it filled. New fields
 *   are only ever appended, so a program built against an older header keeps
 *   working with a newer library. The fixed structs (sett_stats_t) never change.
 * - Callbacks (sett_write_fn, sett_read_fn) run on the calling thread, during
 *   the call that was given them, with the `ctx` passed beside them.
 */


/**
 * Major version of this header; must equal sett_version_number() / 10000.
 */
#define SETT_VERSION_MAJOR 0

/**
 * Minor version of this header.
 */
#define SETT_VERSION_MINOR 1

/**
 * Patch version of this header.
 */
#define SETT_VERSION_PATCH 0

/**
 * MAJOR * 10000 + MINOR * 100 + PATCH of this header.
 */
#define SETT_VERSION_NUMBER 100

/**
 * Most levels a sett_stats_t reports.
 */
#define SETT_MAX_LEVELS 16

/**
 * Success.
 */
#define SETT_OK 0

/**
 * The key has no value (not an error: *err is not set). Also a named
 * object that does not exist (sett_drop_keyspace), then with *err set.
 */
#define SETT_NOT_FOUND 1

/**
 * A transaction conflicted with one that committed after it started; retry it.
 */
#define SETT_CONFLICT 2

/**
 * A NULL pointer, an empty key, a bad enum value or another bad argument.
 */
#define SETT_INVALID_ARGUMENT 3

/**
 * An operating-system I/O error.
 */
#define SETT_IO 4

/**
 * Damaged data; the message names the file and offset.
 */
#define SETT_CORRUPTION 5

/**
 * The database (or the transaction or iterator) is closed.
 */
#define SETT_CLOSED 6

/**
 * A key, value, batch or transaction exceeds its limit.
 */
#define SETT_TOO_BIG 7

/**
 * The caller's buffer is too small; the needed length is reported.
 */
#define SETT_BUFFER_TOO_SMALL 8

/**
 * A panic inside sett was caught; the database may be unusable.
 */
#define SETT_PANIC 9

/**
 * Another process holds the database directory.
 */
#define SETT_LOCKED 10

/**
 * A write to a database opened read-only.
 */
#define SETT_READ_ONLY 11

/**
 * An earlier write error left the database refusing writes.
 */
#define SETT_POISONED 12

/**
 * A file has a format version this library cannot read.
 */
#define SETT_UNSUPPORTED_VERSION 13

/**
 * An option is out of range; the message names it.
 */
#define SETT_INVALID_OPTION 14

/**
 * A change-feed subscriber fell behind: its undelivered changes were
 * dropped. sett_error_version() is the version to resubscribe from.
 */
#define SETT_FELL_BEHIND 15

/**
 * A subscription asked to start from a version older than the change feed's
 * history holds; sett_error_version() is the oldest version it can start from.
 */
#define SETT_FEED_HISTORY_TOO_SHORT 16

/**
 * An engine error this version of the header has no code for (a newer
 * library's); the message says what failed.
 */
#define SETT_OTHER 17

/**
 * A key holds merge operands but the database was opened without a merge
 * operator, or a merge was written to such a database: open it with the
 * operator it records (sett_options_set_merge_operator()).
 */
#define SETT_MERGE_OPERATOR_MISSING 18

/**
 * sett_open() was given another merge operator than the one the database
 * records; the message names the recorded one. Nothing was changed.
 */
#define SETT_MERGE_OPERATOR_MISMATCH 19

/**
 * The merge operator refused a key's operands (an operand of the wrong
 * size for sett.u64_add, say); the operands stay stored as they were.
 */
#define SETT_MERGE_FAILED 20

/**
 * The encryption key given is not the one the database was encrypted with;
 * nothing was read or changed.
 */
#define SETT_WRONG_ENCRYPTION_KEY 21

/**
 * The database is encrypted and no encryption key was given.
 */
#define SETT_ENCRYPTION_KEY_REQUIRED 22

/**
 * An encryption key was given for a database that is not encrypted.
 */
#define SETT_NOT_ENCRYPTED 23

/**
 * A change that put a value (sett_change_t.kind).
 */
#define SETT_CHANGE_PUT 0

/**
 * A change that deleted its key (sett_change_t.kind); its value is empty.
 */
#define SETT_CHANGE_DELETE 1

/**
 * A range delete (sett_change_t.kind): every key in [key, value) was
 * deleted (an empty value: no upper bound). A subscriber to prefixes gets
 * it when the range meets one of them, with the whole range.
 */
#define SETT_CHANGE_DELETE_RANGE 2

/**
 * A merge (sett_change_t.kind): the value is the operand written, not the
 * key's new value (sett_get() reads that).
 */
#define SETT_CHANGE_MERGE 3

/**
 * Compression type: data blocks stored as they are (the default).
 */
#define SETT_COMPRESSION_NONE 0

/**
 * Compression type: LZ4 (block format).
 */
#define SETT_COMPRESSION_LZ4 1

/**
 * Compression type: zstd, at the level of sett_options_set_zstd_level().
 */
#define SETT_COMPRESSION_ZSTD 2

/**
 * Keyspace compression (sett_keyspace_options_set_compression()): the
 * database's per-level choice. Not a codec: database options refuse it.
 */
#define SETT_COMPRESSION_INHERIT -1

/**
 * Length in bytes of an encryption master key (AES-256).
 */
#define SETT_ENCRYPTION_KEY_LEN 32

/**
 * A write batch. One thread at a time.
 */
typedef struct sett_batch_t sett_batch_t;

/**
 * A bulk load in progress: sorted keys straight into bottom-level tables.
 * One thread at a time.
 */
typedef struct sett_bulk_loader_t sett_bulk_loader_t;

/**
 * An open database. Safe to use from many threads at once. Close with
 * sett_close(), then release the handle with sett_db_free(); between the two,
 * every call on it returns SETT_CLOSED.
 */
typedef struct sett_db_t sett_db_t;

/**
 * An error: a status code and a message. Owned by the caller; free with
 * sett_error_free().
 */
typedef struct sett_error_t sett_error_t;

/**
 * What an iterator walks. One thread at a time.
 */
typedef struct sett_iter_options_t sett_iter_options_t;

/**
 * An iterator over a snapshot. One thread at a time. It stays memory-safe
 * after its database is closed or freed: moving it then returns SETT_CLOSED.
 */
typedef struct sett_iter_t sett_iter_t;

/**
 * Options of a keyspace, given when it is created. One thread at a time.
 */
typedef struct sett_keyspace_options_t sett_keyspace_options_t;

/**
 * A keyspace of an open database: an ordered map of its own (RocksDB's
 * column family). Safe to use from many threads at once. Release it with
 * sett_keyspace_close() (which does not drop the keyspace); calls on it
 * after its database is closed return SETT_CLOSED, and after
 * sett_drop_keyspace() SETT_INVALID_ARGUMENT.
 */
typedef struct sett_keyspace_t sett_keyspace_t;

/**
 * Options for sett_open(); defaults as documented per setter.
 */
typedef struct sett_options_t sett_options_t;

/**
 * A persisted sequence of increasing integers. Thread-safe.
 */
typedef struct sett_sequence_t sett_sequence_t;

/**
 * A live subscription to the change feed, from sett_subscribe(). Use it from
 * one thread at a time; close it with sett_subscription_close() (not while
 * another thread is in sett_subscription_next() on it).
 */
typedef struct sett_subscription_t sett_subscription_t;

/**
 * A transaction. One thread at a time. After sett_txn_commit() or
 * sett_txn_discard() every call on it returns SETT_CLOSED; release it with
 * sett_txn_free().
 */
typedef struct sett_txn_t sett_txn_t;

/**
 * Counts and sizes of a database (sett_stats()).
 */
typedef struct sett_stats_t {
  /**
   * Levels in use (entries past it in the arrays are 0).
   */
  uint32_t num_levels;
  /**
   * Tables per level, L0 first.
   */
  uint64_t level_tables[SETT_MAX_LEVELS];
  /**
   * Bytes per level.
   */
  uint64_t level_bytes[SETT_MAX_LEVELS];
  uint64_t vlog_files;
  uint64_t vlog_bytes;
  uint64_t memtable_bytes;
  uint64_t immutable_memtables;
  uint64_t index_filter_bytes;
  uint64_t last_seq;
  uint64_t table_entries;
  uint64_t write_groups;
  uint64_t batches_written;
  /**
   * Levels due for compaction now (L0 at its table-count trigger, a deeper
   * level over its target size), whether or not one is already running.
   */
  uint64_t compactions_pending;
  /**
   * Compactions in progress (automatic ones, flatten, drop prefix). A
   * benchmark waits for the background work to settle by polling until
   * this, compactions_pending and immutable_memtables are all 0.
   */
  uint64_t compactions_running;
} sett_stats_t;

/**
 * Bytes returned by sett. `data` is NULL when `len` is 0. Owned by the caller:
 * free with sett_buf_free(). `cap` is private to sett.
 */
typedef struct sett_buf_t {
  uint8_t *data;
  size_t len;
  size_t cap;
} sett_buf_t;

/**
 * What sett_checkpoint() did. An extensible struct: set `size` to
 * sizeof(sett_checkpoint_report_t) before the call.
 */
typedef struct sett_checkpoint_report_t {
  /**
   * In: sizeof(sett_checkpoint_report_t). Out: the bytes sett filled.
   */
  size_t size;
  /**
   * Files hard-linked (tables and sealed value-log files).
   */
  uint64_t files_linked;
  /**
   * Files copied: WAL files of a read-only database, and files that could
   * not be linked (the target is on another file system).
   */
  uint64_t files_copied;
  /**
   * Bytes of the linked files (shared with the source, not written again).
   */
  uint64_t bytes_linked;
  /**
   * Bytes written by copies.
   */
  uint64_t bytes_copied;
  /**
   * Wall time of the call, in microseconds.
   */
  uint64_t elapsed_micros;
} sett_checkpoint_report_t;

/**
 * Bytes the caller passes: a pointer and a length (NULL allowed with length 0).
 */
typedef struct sett_bytes_t {
  /**
   * The first byte.
   */
  const uint8_t *data;
  /**
   * The number of bytes.
   */
  size_t len;
} sett_bytes_t;

/**
 * One committed write. `key` and `value` point into the sett_changes_t that
 * holds it and are valid until sett_changes_free().
 */
typedef struct sett_change_t {
  /**
   * SETT_CHANGE_PUT, SETT_CHANGE_DELETE, SETT_CHANGE_DELETE_RANGE or
   * SETT_CHANGE_MERGE; later versions may add kinds: skip kinds you do not know.
   */
  uint32_t kind;
  /**
   * The user-meta byte of a put (0 for a delete).
   */
  uint8_t user_meta;
  /**
   * The key written.
   */
  const uint8_t *key;
  /**
   * Its length.
   */
  size_t key_len;
  /**
   * The value put (NULL with length 0 for a delete or an empty value);
   * the end of a range delete (NULL with length 0: no upper bound).
   */
  const uint8_t *value;
  /**
   * Its length.
   */
  size_t value_len;
  /**
   * The write's version; every op of one batch or transaction shares it.
   */
  uint64_t version;
  /**
   * When the put expires, in unix seconds; 0 = never.
   */
  uint64_t expires_at;
} sett_change_t;

/**
 * Changes returned by sett_subscription_next(), in version order, owned by
 * the caller: free them with sett_changes_free(). `len` is 0 (and `items`
 * NULL) when the wait timed out.
 */
typedef struct sett_changes_t {
  /**
   * The changes.
   */
  struct sett_change_t *items;
  /**
   * How many.
   */
  size_t len;
  /**
   * Private: the bytes the keys and values point into.
   */
  uint8_t *data_;
  /**
   * Private: their length.
   */
  size_t data_len_;
} sett_changes_t;

/**
 * What sett_verify() checked. An extensible struct: set `size` to
 * sizeof(sett_verify_report_t) before the call.
 */
typedef struct sett_verify_report_t {
  /**
   * In: sizeof(sett_verify_report_t). Out: the bytes sett filled.
   */
  size_t size;
  /**
   * Tables whose every block checksum and format were checked.
   */
  uint64_t tables;
  /**
   * Table blocks checked.
   */
  uint64_t blocks;
  /**
   * Entries (all versions) walked in memtables and tables.
   */
  uint64_t entries;
  /**
   * Value-log entries read back and checked through their pointers.
   */
  uint64_t values;
} sett_verify_report_t;

/**
 * Counts and sizes of a database, GC included (sett_stats_ex()). An extensible
 * struct: set `size` to sizeof(sett_stats_ex_t) before the call. It replaces
 * sett_stats_t, whose layout is fixed.
 */
typedef struct sett_stats_ex_t {
  /**
   * In: sizeof(sett_stats_ex_t). Out: the bytes sett filled.
   */
  size_t size;
  /**
   * Levels in use (entries past it in the arrays are 0).
   */
  uint64_t num_levels;
  /**
   * Tables per level, L0 first.
   */
  uint64_t level_tables[SETT_MAX_LEVELS];
  /**
   * Bytes per level.
   */
  uint64_t level_bytes[SETT_MAX_LEVELS];
  /**
   * Live value-log files and their bytes.
   */
  uint64_t vlog_files;
  uint64_t vlog_bytes;
  /**
   * Estimated bytes of the active and immutable memtables.
   */
  uint64_t memtable_bytes;
  /**
   * Immutable memtables waiting to be flushed.
   */
  uint64_t immutable_memtables;
  /**
   * Bytes held by the tables themselves: key ranges and pinned indexes
   * and filters (those loaded through the cache are in cache_usage).
   */
  uint64_t index_filter_bytes;
  /**
   * Sequence number (version) of the last write.
   */
  uint64_t last_seq;
  /**
   * Entries (all versions, tombstones included) in tables.
   */
  uint64_t table_entries;
  /**
   * Write groups and batches written since open.
   */
  uint64_t write_groups;
  uint64_t batches_written;
  /**
   * fsyncs of the WAL since open (only with sync_writes).
   */
  uint64_t wal_syncs;
  /**
   * Levels due for compaction now; compactions in progress.
   */
  uint64_t compactions_pending;
  uint64_t compactions_running;
  /**
   * Value-log GC since open, background and sett_run_value_log_gc(): files
   * whose live values were moved before they were deleted.
   */
  uint64_t gc_files_rewritten;
  /**
   * Value-log files deleted without a rewrite (no live value left).
   */
  uint64_t gc_files_deleted;
  /**
   * Bytes returned to the file system (deleted files less what was moved).
   */
  uint64_t gc_bytes_reclaimed;
  /**
   * Time spent in value-log GC, in microseconds (waits for its rate included).
   */
  uint64_t gc_micros;
  /**
   * Value-log files the background GC will collect (their garbage share
   * reached vlog_gc_ratio) and their bytes: its backlog, 0 when background
   * GC is off. A benchmark waits for it as for compactions_pending.
   */
  uint64_t gc_pending_files;
  uint64_t gc_pending_bytes;
  /**
   * The memory budget (sett_options_set_cache_size) and the bytes its
   * cache holds now, never above it: pinned and cached table indexes and
   * filters, and decompressed blocks of compressed tables.
   */
  uint64_t cache_capacity;
  uint64_t cache_usage;
  /**
   * Of cache_usage, the indexes and filters pinned by their tables.
   */
  uint64_t cache_pinned_bytes;
  /**
   * Lookups of indexes and filters not pinned: found in the cache, or loaded.
   */
  uint64_t cache_index_filter_hits;
  uint64_t cache_index_filter_misses;
  /**
   * Reads of compressed data blocks: found decompressed, or decompressed.
   */
  uint64_t cache_data_hits;
  uint64_t cache_data_misses;
  /**
   * Value-log files in which GC found a damaged live entry: each is kept,
   * left out of later GC rounds while the database is open, and reported
   * by sett_verify() with its file and offset.
   */
  uint64_t gc_damaged_files;
  /**
   * Per level, L0 first: bytes of tables written into it since open, by
   * flushes into L0 and by compactions into the others (a table moved
   * down whole is not written again).
   */
  uint64_t level_bytes_written[SETT_MAX_LEVELS];
  /**
   * Per level: bytes of the tables that compactions into it read since
   * open (inputs from the level above and from the level itself).
   */
  uint64_t level_bytes_read[SETT_MAX_LEVELS];
  /**
   * Bytes appended to the WAL since open.
   */
  uint64_t wal_bytes_written;
  /**
   * Bytes of live values the value-log GC moved (appended again) since open.
   */
  uint64_t gc_bytes_moved;
} sett_stats_ex_t;

/**
 * One entry lent by `sett_iter_next_view`: its key and value where the
 * iterator holds them. An empty key or value is NULL with length 0.
 */
typedef struct sett_entry_view_t {
  const uint8_t *key;
  size_t key_len;
  const uint8_t *value;
  size_t value_len;
} sett_entry_view_t;

/**
 * Receives the next `len` bytes of a backup (`data` is valid only during the
 * call; `len` is never 0). Return 0 once all `len` bytes are taken; any other
 * value stops the backup, which then fails with SETT_IO naming that value.
 */
typedef int (*sett_write_fn)(void *ctx, const uint8_t *data, size_t len);

/**
 * Supplies the next bytes of a backup to restore: copy at most `cap` bytes to
 * `buf` and store their number in *len (0 = the stream has ended). Return 0 on
 * success; any other value stops the restore, which then fails with SETT_IO
 * naming that value.
 */
typedef int (*sett_read_fn)(void *ctx, uint8_t *buf, size_t cap, size_t *len);

#ifdef __cplusplus
extern "C" {
#endif // __cplusplus

/**
 * The version of the loaded library: MAJOR * 10000 + MINOR * 100 + PATCH.
 * Compare with SETT_VERSION_NUMBER to catch a header/library mismatch.
 */
uint32_t sett_version_number(void);

/**
 * The version of the loaded library as a static string ("0.1.0"); never freed.
 */
const char *sett_version_string(void);

/**
 * Fills *out with the database's counts and sizes.
 */
int sett_stats(struct sett_db_t *db, struct sett_stats_t *out, struct sett_error_t **err);

/**
 * One round of value-log GC with the given discard ratio in (0, 1). *collected
 * (may be NULL) receives 1 if a file was rewritten or deleted, 0 if nothing had
 * that much garbage. Call it in a loop until it reports 0.
 */
int sett_run_value_log_gc(struct sett_db_t *db,
                          double discard_ratio,
                          int *collected,
                          struct sett_error_t **err);

/**
 * Writes a backup to the file at `path` (created or truncated, then synced):
 * live entries if `since` is 0, else every version after `since`. *next_since
 * (may be NULL) receives the `since` for the next incremental backup.
 */
int sett_backup(struct sett_db_t *db,
                const char *path,
                uint64_t since,
                uint64_t *next_since,
                struct sett_error_t **err);

/**
 * Restores the backup in file `path` (a full backup needs an empty database).
 * *entries (may be NULL) receives the number of entries applied.
 */
int sett_restore(struct sett_db_t *db,
                 const char *path,
                 uint64_t *entries,
                 struct sett_error_t **err);

/**
 * Makes every write durable: the memtables are flushed to tables.
 */
int sett_flush(struct sett_db_t *db, struct sett_error_t **err);

/**
 * Flushes the memtables and compacts everything into the last level.
 */
int sett_flatten(struct sett_db_t *db, struct sett_error_t **err);

/**
 * Deletes every key (files are removed, not rewritten).
 */
int sett_drop_all(struct sett_db_t *db, struct sett_error_t **err);

/**
 * Deletes every key starting with `prefix`: one range delete over the
 * prefix (see sett_delete_range()), atomic, and writers do not wait.
 * An empty prefix is sett_drop_all().
 */
int sett_drop_prefix(struct sett_db_t *db,
                     const uint8_t *prefix,
                     size_t len,
                     struct sett_error_t **err);

/**
 * A sequence stored under `key`, leasing `bandwidth` numbers at a time.
 * Release with sett_sequence_free().
 */
int sett_sequence_new(struct sett_db_t *db,
                      const uint8_t *key,
                      size_t keylen,
                      uint64_t bandwidth,
                      struct sett_sequence_t **seq,
                      struct sett_error_t **err);

/**
 * The next number of the sequence, in *value.
 */
int sett_sequence_next(struct sett_sequence_t *seq, uint64_t *value, struct sett_error_t **err);

/**
 * Gives back the unused part of the current lease.
 */
int sett_sequence_release(struct sett_sequence_t *seq, struct sett_error_t **err);

/**
 * Frees a sequence (without releasing its lease). Accepts NULL.
 */
void sett_sequence_free(struct sett_sequence_t *seq);

/**
 * Starts a bulk load into an empty database (SETT_INVALID_ARGUMENT otherwise).
 * Other writes fail until sett_bulk_loader_finish() or sett_bulk_loader_free().
 */
int sett_bulk_loader_new(struct sett_db_t *db,
                         struct sett_bulk_loader_t **loader,
                         struct sett_error_t **err);

/**
 * Adds the next entry; keys must be strictly increasing.
 */
int sett_bulk_loader_add(struct sett_bulk_loader_t *loader,
                         const uint8_t *key,
                         size_t keylen,
                         const uint8_t *val,
                         size_t vallen,
                         struct sett_error_t **err);

/**
 * Adds the next entry with a user-meta byte and a time to live in
 * milliseconds (0 = none; rounded up to whole seconds, counted from this
 * call), as sett_put_with(); keys must be strictly increasing.
 */
int sett_bulk_loader_add_with(struct sett_bulk_loader_t *loader,
                              const uint8_t *key,
                              size_t keylen,
                              const uint8_t *val,
                              size_t vallen,
                              uint8_t user_meta,
                              uint64_t ttl_ms,
                              struct sett_error_t **err);

/**
 * Makes the loaded data durable and visible; *count (may be NULL) receives the
 * number of entries. The loader is finished either way; free it after.
 */
int sett_bulk_loader_finish(struct sett_bulk_loader_t *loader,
                            uint64_t *count,
                            struct sett_error_t **err);

/**
 * Frees a loader; an unfinished load is abandoned (its files removed). Accepts NULL.
 */
void sett_bulk_loader_free(struct sett_bulk_loader_t *loader);

/**
 * Makes a new data key for an encrypted database and stores its id in
 * *key_id (if not NULL): files created from now on are encrypted with it,
 * older files keep their keys. The key is durable when this returns.
 * SETT_INVALID_ARGUMENT for a database opened without an encryption key or
 * a NULL db, SETT_READ_ONLY for a read-only one.
 */
int sett_rotate_encryption_key(struct sett_db_t *db, uint32_t *key_id, struct sett_error_t **err);

/**
 * A new empty batch. Free with sett_batch_free().
 */
struct sett_batch_t *sett_batch_new(void);

/**
 * Frees a batch. Accepts NULL.
 */
void sett_batch_free(struct sett_batch_t *batch);

/**
 * Adds a put. Keys and values are checked when the batch is written.
 */
int sett_batch_put(struct sett_batch_t *batch,
                   const uint8_t *key,
                   size_t keylen,
                   const uint8_t *val,
                   size_t vallen);

/**
 * Adds a put with a user-meta byte and a TTL in milliseconds (0 = none).
 */
int sett_batch_put_with(struct sett_batch_t *batch,
                        const uint8_t *key,
                        size_t keylen,
                        const uint8_t *val,
                        size_t vallen,
                        uint8_t user_meta,
                        uint64_t ttl_ms);

/**
 * Adds a merge of `operand` into key (see sett_merge()). Merges of one
 * batch on one key combine in order, as separate writes would. sett_write()
 * refuses the whole batch with SETT_MERGE_OPERATOR_MISSING when the
 * database has no merge operator.
 */
int sett_batch_merge(struct sett_batch_t *batch,
                     const uint8_t *key,
                     size_t keylen,
                     const uint8_t *operand,
                     size_t operand_len);

/**
 * Adds a delete.
 */
int sett_batch_delete(struct sett_batch_t *batch, const uint8_t *key, size_t keylen);

/**
 * Removes every operation from the batch.
 */
int sett_batch_clear(struct sett_batch_t *batch);

/**
 * Number of operations in the batch (0 for NULL).
 */
size_t sett_batch_count(const struct sett_batch_t *batch);

/**
 * Frees the bytes of `buf` and resets it to {NULL, 0, 0}. Accepts NULL and an
 * already freed or empty buffer.
 */
void sett_buf_free(struct sett_buf_t *buf);

/**
 * Makes an openable copy of the database in directory `path`, which must not
 * exist (its parent must), while other threads keep writing: tables and sealed
 * value-log files are hard-linked (copied where the file system cannot link).
 * The copy holds every write acknowledged before the call; open it with
 * sett_open() as a database of its own. A read-only database links what its
 * MANIFEST lists and copies the WALs its open replayed.
 * SETT_INVALID_ARGUMENT: `path` exists (nothing is changed) or its parent is
 * not a directory. An interrupted checkpoint (a crash, an I/O error that could
 * not be cleaned up) leaves a directory holding CHECKPOINT-INCOMPLETE, which
 * sett_open() refuses with SETT_CORRUPTION. `report` may be NULL; otherwise
 * its `size` must be set, and it is written only on SETT_OK.
 */
int sett_checkpoint(struct sett_db_t *db,
                    const char *path,
                    struct sett_checkpoint_report_t *report,
                    struct sett_error_t **err);

/**
 * Opens (or creates) the database in directory `path`. `opts` may be NULL for
 * the defaults (it is not taken: free it after). On success *db receives a
 * handle; on failure *db is set to NULL.
 */
int sett_open(const char *path,
              const struct sett_options_t *opts,
              struct sett_db_t **db,
              struct sett_error_t **err);

/**
 * Flushes and closes the database and releases its directory. The handle stays
 * valid (calls return SETT_CLOSED) until sett_db_free(). Closing twice is OK.
 */
int sett_close(struct sett_db_t *db, struct sett_error_t **err);

/**
 * Releases a handle, closing the database first if needed. Accepts NULL.
 */
void sett_db_free(struct sett_db_t *db);

/**
 * Stores key → value.
 */
int sett_put(struct sett_db_t *db,
             const uint8_t *key,
             size_t keylen,
             const uint8_t *val,
             size_t vallen,
             struct sett_error_t **err);

/**
 * Stores key → value with a user-meta byte and a time to live in milliseconds
 * (0 = none; rounded up to whole seconds).
 */
int sett_put_with(struct sett_db_t *db,
                  const uint8_t *key,
                  size_t keylen,
                  const uint8_t *val,
                  size_t vallen,
                  uint8_t user_meta,
                  uint64_t ttl_ms,
                  struct sett_error_t **err);

/**
 * Merges `operand` into key with the database's merge operator (see
 * sett_options_set_merge_operator()): one write, without reading the key;
 * reads fold the operands onto the key's value. SETT_MERGE_OPERATOR_MISSING
 * when the database has no merge operator (nothing is written).
 */
int sett_merge(struct sett_db_t *db,
               const uint8_t *key,
               size_t keylen,
               const uint8_t *operand,
               size_t operand_len,
               struct sett_error_t **err);

/**
 * Removes key (no error if absent).
 */
int sett_delete(struct sett_db_t *db, const uint8_t *key, size_t keylen, struct sett_error_t **err);

/**
 * Reads key. SETT_OK: *value holds a copy (free with sett_buf_free()).
 * SETT_NOT_FOUND: *value is {NULL, 0}. `value` must not be NULL.
 */
int sett_get(struct sett_db_t *db,
             const uint8_t *key,
             size_t keylen,
             struct sett_buf_t *value,
             struct sett_error_t **err);

/**
 * Reads key into the caller's buffer `dst` of `cap` bytes (no allocation).
 * *len receives the value's length. SETT_BUFFER_TOO_SMALL when it exceeds
 * `cap` (nothing is copied; call again with *len bytes). `dst` may be NULL when
 * `cap` is 0.
 */
int sett_get_into(struct sett_db_t *db,
                  const uint8_t *key,
                  size_t keylen,
                  uint8_t *dst,
                  size_t cap,
                  size_t *len,
                  struct sett_error_t **err);

/**
 * Reads key with its metadata: user meta, expiry (unix seconds, 0 = never) and
 * version. Any of user_meta, expires_at, version may be NULL.
 */
int sett_get_entry(struct sett_db_t *db,
                   const uint8_t *key,
                   size_t keylen,
                   struct sett_buf_t *value,
                   uint8_t *user_meta,
                   uint64_t *expires_at,
                   uint64_t *version,
                   struct sett_error_t **err);

/**
 * Applies a batch atomically. The batch is not consumed (clear or free it after).
 */
int sett_write(struct sett_db_t *db, const struct sett_batch_t *batch, struct sett_error_t **err);

/**
 * Reads `n` keys at one consistent point in one call. `values[i]` receives a
 * copy (free each with sett_buf_free()) and `statuses[i]` SETT_OK or
 * SETT_NOT_FOUND. The return value is SETT_OK unless the whole call failed.
 */
int sett_multi_get(struct sett_db_t *db,
                   const uint8_t *const *keys,
                   const size_t *keylens,
                   size_t n,
                   struct sett_buf_t *values,
                   int *statuses,
                   struct sett_error_t **err);

/**
 * Reads `n` keys at one consistent point in one call, copying the values
 * found back to back into the caller's buffer `dst` of `cap` bytes (no
 * allocation per value). `lens[i]` receives the length of key i's value (0
 * when absent) and `statuses[i]` SETT_OK or SETT_NOT_FOUND; value i starts
 * where value i-1 ends. *needed receives the bytes all the values take:
 * SETT_BUFFER_TOO_SMALL when that exceeds `cap` (nothing is copied; call
 * again with a buffer of *needed bytes, which reads the keys anew). `dst`
 * may be NULL when `cap` is 0.
 */
int sett_multi_get_into(struct sett_db_t *db,
                        const uint8_t *const *keys,
                        const size_t *keylens,
                        size_t n,
                        uint8_t *dst,
                        size_t cap,
                        size_t *lens,
                        int *statuses,
                        size_t *needed,
                        struct sett_error_t **err);

/**
 * The message of `err` (UTF-8, NUL-terminated), valid until sett_error_free().
 * Returns "" for NULL.
 */
const char *sett_error_message(const struct sett_error_t *err);

/**
 * The status code of `err`; SETT_INVALID_ARGUMENT for NULL.
 */
int sett_error_code(const struct sett_error_t *err);

/**
 * The version an error carries: for SETT_FELL_BEHIND the version to
 * resubscribe from, for SETT_FEED_HISTORY_TOO_SHORT the oldest version a
 * subscription can start from; 0 for other errors and NULL.
 */
uint64_t sett_error_version(const struct sett_error_t *err);

/**
 * Frees an error. Accepts NULL.
 */
void sett_error_free(struct sett_error_t *err);

/**
 * A static description of a status code ("ok", "not found", ...); never freed.
 */
const char *sett_status_string(int code);

/**
 * Subscribes to the change feed: every write committed after now (or, with
 * `has_from` = 1, after version `from_version`, served from the in-memory
 * history, see sett_options_set_change_feed_history_bytes()) whose key starts
 * with one of the `n` `prefixes` (n = 0: every key), in version order, each
 * once, after it became visible to reads. `max_pending_bytes` (0: 8 MiB)
 * bounds the changes queued for this subscriber: past it, they are dropped
 * and sett_subscription_next() fails with SETT_FELL_BEHIND, whose
 * sett_error_version() is the version to resubscribe from. A write never
 * waits on a subscriber. A version older than the history fails with
 * SETT_FEED_HISTORY_TOO_SHORT (sett_error_version(): the oldest one held):
 * subscribe from now, scan a read-only transaction, and apply only changes
 * with a version above its sett_txn_read_ts(). A range delete (also
 * sett_drop_prefix()) is one SETT_CHANGE_DELETE_RANGE change. A bulk load
 * and sett_drop_all() end live subscriptions with SETT_FELL_BEHIND and
 * cannot be resumed across. Writes to keyspaces are not delivered (use
 * sett_keyspace_subscribe()). *sub receives a handle to close with
 * sett_subscription_close().
 */
int sett_subscribe(struct sett_db_t *db,
                   const struct sett_bytes_t *prefixes,
                   size_t n,
                   uint64_t from_version,
                   uint32_t has_from,
                   size_t max_pending_bytes,
                   struct sett_subscription_t **sub,
                   struct sett_error_t **err);

/**
 * Waits up to `timeout_ms` (negative: until changes come) for changes and
 * stores every change queued so far in *changes (len 0 when the wait timed
 * out; a version's changes are never split between calls). Free them with
 * sett_changes_free(). SETT_FELL_BEHIND once the subscriber fell behind
 * (every later call too); SETT_CLOSED once the database is closed and every
 * change committed before was delivered. *changes is set to empty on error.
 */
int sett_subscription_next(struct sett_subscription_t *sub,
                           int64_t timeout_ms,
                           struct sett_changes_t *changes,
                           struct sett_error_t **err);

/**
 * Frees the changes in *changes and sets it to empty. Accepts NULL and an
 * empty (or already freed) set.
 */
void sett_changes_free(struct sett_changes_t *changes);

/**
 * Unsubscribes and frees the handle. Accepts NULL.
 */
void sett_subscription_close(struct sett_subscription_t *sub);

/**
 * The newest version visible to reads (0 for NULL db): what a read begun now sees.
 */
uint64_t sett_last_version(struct sett_db_t *db);

/**
 * The version a transaction reads at: it sees every write with a version at
 * or below it and none above (0 for NULL or a committed or discarded
 * transaction). The rescan recipe of sett_subscribe() skips changes at or
 * below it.
 */
uint64_t sett_txn_read_ts(struct sett_txn_t *txn);

/**
 * Checks every checksum of the database: each table block, and each value-log
 * entry that a live version points to. SETT_OK: *report (may be NULL) receives
 * the counts. SETT_CORRUPTION: the first damage found; *err names the file and
 * offset, and *report is not written. The database stays open and usable
 * either way; verify never changes it.
 */
int sett_verify(struct sett_db_t *db,
                struct sett_verify_report_t *report,
                struct sett_error_t **err);

/**
 * Fills *out (its `size` set by the caller) with the database's counts and
 * sizes, value-log GC included. SETT_CLOSED after sett_close().
 */
int sett_stats_ex(struct sett_db_t *db, struct sett_stats_ex_t *out, struct sett_error_t **err);

/**
 * New iterator options: whole key space, forward, with values, prefetch 256.
 */
struct sett_iter_options_t *sett_iter_options_new(void);

/**
 * Frees iterator options. Accepts NULL.
 */
void sett_iter_options_free(struct sett_iter_options_t *opts);

/**
 * Only keys starting with `prefix` (copied; length 0 clears it).
 */
int sett_iter_options_set_prefix(struct sett_iter_options_t *opts,
                                 const uint8_t *prefix,
                                 size_t len);

/**
 * Only keys in [start, end); a length of 0 leaves that side open.
 */
int sett_iter_options_set_bounds(struct sett_iter_options_t *opts,
                                 const uint8_t *start,
                                 size_t start_len,
                                 const uint8_t *end,
                                 size_t end_len);

/**
 * 1: walk from the largest key down; 0 (default): up.
 */
int sett_iter_options_set_reverse(struct sett_iter_options_t *opts, uint32_t value);

/**
 * 1: keys only, the value log is never read; 0 (default): with values.
 */
int sett_iter_options_set_keys_only(struct sett_iter_options_t *opts, uint32_t value);

/**
 * How many items ahead values are read (at least 1; default 256).
 */
int sett_iter_options_set_prefetch(struct sett_iter_options_t *opts, uint32_t value);

/**
 * A new iterator over a snapshot of the database taken now, positioned on the
 * first entry. `opts` may be NULL. Free with sett_iter_free().
 */
int sett_iter_new(struct sett_db_t *db,
                  const struct sett_iter_options_t *opts,
                  struct sett_iter_t **iter,
                  struct sett_error_t **err);

/**
 * A new iterator over a transaction's view (its snapshot plus its writes).
 */
int sett_txn_iter_new(struct sett_txn_t *txn,
                      const struct sett_iter_options_t *opts,
                      struct sett_iter_t **iter,
                      struct sett_error_t **err);

/**
 * 1 while the iterator is on an entry, 0 at the end (or for NULL).
 */
int sett_iter_valid(const struct sett_iter_t *iter);

/**
 * The current key: *key points into the iterator (valid until it moves or is
 * freed), *len its length. {NULL, 0} when not valid.
 */
int sett_iter_key(const struct sett_iter_t *iter, const uint8_t **key, size_t *len);

/**
 * The current value, as sett_iter_key() (empty in keys-only mode).
 */
int sett_iter_value(const struct sett_iter_t *iter, const uint8_t **value, size_t *len);

/**
 * Moves to the next entry.
 */
int sett_iter_next(struct sett_iter_t *iter, struct sett_error_t **err);

/**
 * Moves to the first key >= key (reverse: the last key <= key) within bounds.
 */
int sett_iter_seek(struct sett_iter_t *iter,
                   const uint8_t *key,
                   size_t keylen,
                   struct sett_error_t **err);

/**
 * Moves back to the first entry (reverse: the last).
 */
int sett_iter_rewind(struct sett_iter_t *iter, struct sett_error_t **err);

/**
 * Copies as many entries as fit into `buf` (`cap` bytes), starting at the
 * current one, and moves past them: one call for many items. Each entry is
 * `u32 key length (little-endian) | u32 value length | key | value`.
 * *count receives the number of entries, *used the bytes written. At the end
 * of the iteration: SETT_OK with *count 0. SETT_BUFFER_TOO_SMALL when not even
 * the current entry fits: *used then holds the size it needs.
 */
int sett_iter_next_batch(struct sett_iter_t *iter,
                         uint8_t *buf,
                         size_t cap,
                         size_t *count,
                         size_t *used,
                         struct sett_error_t **err);

/**
 * Lends up to `cap` entries, starting at the current one, into `views`
 * without copying them, and moves past them: one call for many items, as
 * sett_iter_next_batch, without its copy. *count receives the number of
 * entries; at the end of the iteration: SETT_OK with *count 0. The bytes the
 * views point to stay valid until the next call that moves the iterator
 * (sett_iter_next, sett_iter_next_batch, sett_iter_next_view,
 * sett_iter_seek, sett_iter_rewind) or frees it. An error met after the
 * first entry is returned by the next call: no entry is lost.
 */
int sett_iter_next_view(struct sett_iter_t *iter,
                        struct sett_entry_view_t *views,
                        size_t cap,
                        size_t *count,
                        struct sett_error_t **err);

/**
 * Frees an iterator. Accepts NULL.
 */
void sett_iter_free(struct sett_iter_t *iter);

/**
 * New keyspace options: the database's value threshold and compression,
 * no default TTL.
 * Free with sett_keyspace_options_free().
 */
struct sett_keyspace_options_t *sett_keyspace_options_new(void);

/**
 * Frees keyspace options. Accepts NULL.
 */
void sett_keyspace_options_free(struct sett_keyspace_options_t *opts);

/**
 * Values of at least this many bytes written to the keyspace go to the value
 * log (1..=1048576, checked at sett_keyspace_open; 0: the database's).
 */
int sett_keyspace_options_set_value_threshold(struct sett_keyspace_options_t *opts, size_t value);

/**
 * The TTL of puts to the keyspace that give none, in milliseconds (rounded
 * up to whole seconds; 0: none).
 */
int sett_keyspace_options_set_default_ttl(struct sett_keyspace_options_t *opts, uint64_t ttl_ms);

/**
 * The codec of every table block holding the keyspace's keys, on every
 * level: SETT_COMPRESSION_NONE, _LZ4 or _ZSTD (zstd at the database's
 * sett_options_set_zstd_level()), or SETT_COMPRESSION_INHERIT (the
 * default) for the database's per-level choice. Any other value is
 * SETT_INVALID_ARGUMENT and leaves the options as they were.
 */
int sett_keyspace_options_set_compression(struct sett_keyspace_options_t *opts, int value);

/**
 * The keyspace's codec in force: a SETT_COMPRESSION_* value, or
 * SETT_COMPRESSION_INHERIT when it uses the database's (also for NULL).
 */
int sett_keyspace_compression(const struct sett_keyspace_t *ks);

/**
 * Opens keyspace `name` (NUL-terminated UTF-8, 1..=255 bytes), creating it
 * with `opts` if it does not exist. `opts` may be NULL: for an existing
 * keyspace that keeps its recorded options (other options replace them).
 * *ks receives a handle (NULL on failure). A read-only database opens
 * existing keyspaces only (SETT_READ_ONLY).
 */
int sett_keyspace_open(struct sett_db_t *db,
                       const char *name,
                       const struct sett_keyspace_options_t *opts,
                       struct sett_keyspace_t **ks,
                       struct sett_error_t **err);

/**
 * Releases a keyspace handle (the keyspace and its data stay). Accepts NULL.
 */
void sett_keyspace_close(struct sett_keyspace_t *ks);

/**
 * The keyspace's id (its keys are stored under FF FF FF FF | id as 4
 * big-endian bytes); 0 for NULL.
 */
uint32_t sett_keyspace_id(const struct sett_keyspace_t *ks);

/**
 * Drops keyspace `name`: its catalog record and all its keys go in one
 * atomic write (a range tombstone: O(1), writers go on; compaction
 * reclaims the space). Its handles fail from then on. SETT_NOT_FOUND
 * (with *err set) when there is no such keyspace.
 */
int sett_drop_keyspace(struct sett_db_t *db, const char *name, struct sett_error_t **err);

/**
 * The names of the database's keyspaces in byte order: *names receives each
 * name followed by a NUL byte, back to back (free with sett_buf_free()),
 * *count how many there are.
 */
int sett_keyspace_names(struct sett_db_t *db,
                        struct sett_buf_t *names,
                        size_t *count,
                        struct sett_error_t **err);

/**
 * Stores key → value in the keyspace (with its default TTL, if any).
 */
int sett_keyspace_put(struct sett_keyspace_t *ks,
                      const uint8_t *key,
                      size_t keylen,
                      const uint8_t *val,
                      size_t vallen,
                      struct sett_error_t **err);

/**
 * Stores key → value in the keyspace with a user-meta byte and a TTL in
 * milliseconds (0: the keyspace's default TTL, if any).
 */
int sett_keyspace_put_with(struct sett_keyspace_t *ks,
                           const uint8_t *key,
                           size_t keylen,
                           const uint8_t *val,
                           size_t vallen,
                           uint8_t user_meta,
                           uint64_t ttl_ms,
                           struct sett_error_t **err);

/**
 * Merges `operand` into key of the keyspace. Same contract as sett_merge().
 */
int sett_keyspace_merge(struct sett_keyspace_t *ks,
                        const uint8_t *key,
                        size_t keylen,
                        const uint8_t *operand,
                        size_t operand_len,
                        struct sett_error_t **err);

/**
 * Reads key from the keyspace. Same contract as sett_get().
 */
int sett_keyspace_get(struct sett_keyspace_t *ks,
                      const uint8_t *key,
                      size_t keylen,
                      struct sett_buf_t *value,
                      struct sett_error_t **err);

/**
 * Reads `n` keys of the keyspace at one consistent point in one call. Same
 * contract as sett_multi_get().
 */
int sett_keyspace_multi_get(struct sett_keyspace_t *ks,
                            const uint8_t *const *keys,
                            const size_t *keylens,
                            size_t n,
                            struct sett_buf_t *values,
                            int *statuses,
                            struct sett_error_t **err);

/**
 * Reads `n` keys of the keyspace at one consistent point into the caller's
 * buffer. Same contract as sett_multi_get_into().
 */
int sett_keyspace_multi_get_into(struct sett_keyspace_t *ks,
                                 const uint8_t *const *keys,
                                 const size_t *keylens,
                                 size_t n,
                                 uint8_t *dst,
                                 size_t cap,
                                 size_t *lens,
                                 int *statuses,
                                 size_t *needed,
                                 struct sett_error_t **err);

/**
 * Removes key from the keyspace (no error if absent).
 */
int sett_keyspace_delete(struct sett_keyspace_t *ks,
                         const uint8_t *key,
                         size_t keylen,
                         struct sett_error_t **err);

/**
 * Deletes every key of the keyspace in [start, end) with one range
 * tombstone, as sett_delete_range(); an empty `end` is the keyspace's end.
 */
int sett_keyspace_delete_range(struct sett_keyspace_t *ks,
                               const uint8_t *start,
                               size_t start_len,
                               const uint8_t *end,
                               size_t end_len,
                               struct sett_error_t **err);

/**
 * A new iterator over a snapshot of the keyspace taken now; prefix and
 * bounds of `opts` (may be NULL) are in the keyspace's keys, and keys come
 * back as they were put. Free with sett_iter_free().
 */
int sett_keyspace_iter_new(struct sett_keyspace_t *ks,
                           const struct sett_iter_options_t *opts,
                           struct sett_iter_t **iter,
                           struct sett_error_t **err);

/**
 * Adds a put in keyspace `ks` to the batch (with its default TTL, if any);
 * one batch may write several keyspaces and the default one atomically.
 * The batch refers to the keyspace by id: writing it after the keyspace is
 * dropped fails whole.
 */
int sett_batch_put_in(struct sett_batch_t *batch,
                      const struct sett_keyspace_t *ks,
                      const uint8_t *key,
                      size_t keylen,
                      const uint8_t *val,
                      size_t vallen);

/**
 * Adds a merge in keyspace `ks` to the batch (see sett_batch_merge()).
 */
int sett_batch_merge_in(struct sett_batch_t *batch,
                        const struct sett_keyspace_t *ks,
                        const uint8_t *key,
                        size_t keylen,
                        const uint8_t *operand,
                        size_t operand_len);

/**
 * Adds a delete in keyspace `ks` to the batch.
 */
int sett_batch_delete_in(struct sett_batch_t *batch,
                         const struct sett_keyspace_t *ks,
                         const uint8_t *key,
                         size_t keylen);

/**
 * Adds a delete of every key of keyspace `ks` in [start, end) to the batch
 * (an empty `end` is the keyspace's end).
 */
int sett_batch_delete_range_in(struct sett_batch_t *batch,
                               const struct sett_keyspace_t *ks,
                               const uint8_t *start,
                               size_t start_len,
                               const uint8_t *end,
                               size_t end_len);

/**
 * Reads key of keyspace `ks` as the transaction sees it. Same contract as
 * sett_get().
 */
int sett_txn_get_in(struct sett_txn_t *txn,
                    const struct sett_keyspace_t *ks,
                    const uint8_t *key,
                    size_t keylen,
                    struct sett_buf_t *value,
                    struct sett_error_t **err);

/**
 * Buffers a put in keyspace `ks` (applied at commit, atomically with the
 * transaction's other writes in any keyspace).
 */
int sett_txn_put_in(struct sett_txn_t *txn,
                    const struct sett_keyspace_t *ks,
                    const uint8_t *key,
                    size_t keylen,
                    const uint8_t *val,
                    size_t vallen,
                    struct sett_error_t **err);

/**
 * Buffers a merge in keyspace `ks` (see sett_txn_merge()).
 */
int sett_txn_merge_in(struct sett_txn_t *txn,
                      const struct sett_keyspace_t *ks,
                      const uint8_t *key,
                      size_t keylen,
                      const uint8_t *operand,
                      size_t operand_len,
                      struct sett_error_t **err);

/**
 * Buffers a delete in keyspace `ks`.
 */
int sett_txn_delete_in(struct sett_txn_t *txn,
                       const struct sett_keyspace_t *ks,
                       const uint8_t *key,
                       size_t keylen,
                       struct sett_error_t **err);

/**
 * A new iterator over keyspace `ks` as the transaction sees it (keys as
 * sett_keyspace_iter_new() returns them). Free with sett_iter_free().
 */
int sett_txn_iter_new_in(struct sett_txn_t *txn,
                         const struct sett_keyspace_t *ks,
                         const struct sett_iter_options_t *opts,
                         struct sett_iter_t **iter,
                         struct sett_error_t **err);

/**
 * Subscribes to the changes of keyspace `ks`, as sett_subscribe(): the
 * prefixes are in the keyspace's keys, and delivered keys come without the
 * keyspace's prefix. A range delete's end is empty when it is the
 * keyspace's end (a drop of the keyspace is one range delete from "" to "").
 * Database subscriptions never see keyspace changes.
 */
int sett_keyspace_subscribe(struct sett_keyspace_t *ks,
                            const struct sett_bytes_t *prefixes,
                            size_t n,
                            uint64_t from_version,
                            uint32_t has_from,
                            size_t max_pending_bytes,
                            struct sett_subscription_t **sub,
                            struct sett_error_t **err);

/**
 * New options holding the defaults. Free with sett_options_free().
 */
struct sett_options_t *sett_options_new(void);

/**
 * Frees options. Accepts NULL.
 */
void sett_options_free(struct sett_options_t *opts);

/**
 * Chooses the built-in merge operator named `name` for sett_merge() and
 * the other merge calls: "sett.u64_add" (8-byte little-endian unsigned
 * counters, adding with wrap-around), "sett.append" (concatenation) or
 * "sett.max" (the bytewise largest). NULL clears it (default: none; merges
 * are then refused with SETT_MERGE_OPERATOR_MISSING). The database records
 * the name: sett_open() with another one fails with
 * SETT_MERGE_OPERATOR_MISMATCH. An unknown name, or NULL opts, is
 * SETT_INVALID_ARGUMENT, and the options are left unchanged.
 */
int sett_options_set_merge_operator(struct sett_options_t *opts, const char *name);

/**
 * Values of at least this many bytes go to the value log (default 1024). Returns SETT_INVALID_ARGUMENT for NULL opts.
 */
int sett_options_set_value_threshold(struct sett_options_t *opts,
                                     size_t value);

/**
 * Memtable size in bytes (default 16 MiB). Returns SETT_INVALID_ARGUMENT for NULL opts.
 */
int sett_options_set_memtable_size(struct sett_options_t *opts, size_t value);

/**
 * Memtables held at most, active plus immutable (default 4). Returns SETT_INVALID_ARGUMENT for NULL opts.
 */
int sett_options_set_max_memtables(struct sett_options_t *opts,
                                   size_t value);

/**
 * SST block size in bytes (default 4096). Returns SETT_INVALID_ARGUMENT for NULL opts.
 */
int sett_options_set_block_size(struct sett_options_t *opts, size_t value);

/**
 * Compression of table data blocks on every level that
 * sett_options_set_compression_per_level() does not name: one of
 * SETT_COMPRESSION_* (default SETT_COMPRESSION_NONE). Any other value, or NULL
 * opts, is SETT_INVALID_ARGUMENT.
 */
int sett_options_set_compression(struct sett_options_t *opts, int value);

/**
 * Compression per level: `types[i]` (a SETT_COMPRESSION_* value) for tables
 * written to level i, the last one for every deeper level; n = 0 (types may
 * then be NULL) clears the list, so sett_options_set_compression() applies
 * everywhere. More entries than levels is refused at open
 * (SETT_INVALID_OPTION). An unknown type, NULL types with n > 0 or NULL opts
 * is SETT_INVALID_ARGUMENT, and the options are left unchanged.
 */
int sett_options_set_compression_per_level(struct sett_options_t *opts, const int *types, size_t n);

/**
 * zstd level, 1..=22 (default 3), wherever zstd is used; checked at open.
 * Returns SETT_INVALID_ARGUMENT for NULL opts.
 */
int sett_options_set_zstd_level(struct sett_options_t *opts, int value);

/**
 * Bloom filter bits per key, 0 for none (default 10). Returns SETT_INVALID_ARGUMENT for NULL opts.
 */
int sett_options_set_bloom_bits_per_key(struct sett_options_t *opts, size_t value);

/**
 * Target SST size in bytes (default 64 MiB). Returns SETT_INVALID_ARGUMENT for NULL opts.
 */
int sett_options_set_table_size(struct sett_options_t *opts, uint64_t value);

/**
 * Target size of level 1 in bytes (default 256 MiB). Returns SETT_INVALID_ARGUMENT for NULL opts.
 */
int sett_options_set_level_base_size(struct sett_options_t *opts, uint64_t value);

/**
 * Size ratio between levels (default 10). Returns SETT_INVALID_ARGUMENT for NULL opts.
 */
int sett_options_set_level_multiplier(struct sett_options_t *opts, uint64_t value);

/**
 * Number of levels, L0 included (default 7). Returns SETT_INVALID_ARGUMENT for NULL opts.
 */
int sett_options_set_num_levels(struct sett_options_t *opts, size_t value);

/**
 * L0 tables that start a compaction (default 64). Returns SETT_INVALID_ARGUMENT for NULL opts.
 */
int sett_options_set_l0_compaction_trigger(struct sett_options_t *opts, size_t value);

/**
 * L0 tables at which writes slow down (default 96). Returns SETT_INVALID_ARGUMENT for NULL opts.
 */
int sett_options_set_l0_slowdown_trigger(struct sett_options_t *opts, size_t value);

/**
 * L0 tables at which writes stop (default 128). Returns SETT_INVALID_ARGUMENT for NULL opts.
 */
int sett_options_set_l0_stop_trigger(struct sett_options_t *opts, size_t value);

/**
 * Background compaction threads (default 1). Returns SETT_INVALID_ARGUMENT for NULL opts.
 */
int sett_options_set_compaction_threads(struct sett_options_t *opts, size_t value);

/**
 * Value-log file size in bytes before a new one starts (default 1 GiB). Returns SETT_INVALID_ARGUMENT for NULL opts.
 */
int sett_options_set_vlog_file_size(struct sett_options_t *opts,
                                    uint64_t value);

/**
 * Garbage share of a sealed value-log file at which the background GC
 * rewrites and deletes it (default 0.5; 0 turns the background GC off; must be
 * in [0, 1), checked at open). Returns SETT_INVALID_ARGUMENT for NULL opts.
 */
int sett_options_set_vlog_gc_ratio(struct sett_options_t *opts, double value);

/**
 * Garbage share at which the background GC collects a sealed value-log file
 * once the database has had no writes for a second, when below the
 * vlog_gc_ratio (default 0.25; 0: the vlog_gc_ratio while idle too; files are
 * judged by walks over the tables, not a lookup per entry; must be in [0, 1),
 * checked at open). Returns SETT_INVALID_ARGUMENT for NULL opts.
 */
int sett_options_set_vlog_gc_idle_ratio(struct sett_options_t *opts, double value);

/**
 * The memory budget for reading, in bytes (default 256 MiB, at least 1 MiB,
 * checked at open): one cache for table indexes and bloom filters and the
 * table data blocks that reads bring in. Returns SETT_INVALID_ARGUMENT for
 * NULL opts.
 */
int sett_options_set_cache_size(struct sett_options_t *opts, uint64_t value);

/**
 * Bytes per second the background value-log GC reads and rewrites at most
 * while writes run; with no write for a second it runs at device speed,
 * reads or not (default 64 MiB/s; 0: no limit; see
 * sett_options_set_vlog_gc_write_factor). Returns SETT_INVALID_ARGUMENT for NULL opts.
 */
int sett_options_set_vlog_gc_rate(struct sett_options_t *opts, uint64_t value);

/**
 * While writes run, the background value-log GC's rate limit is raised to
 * this many times the rate at which they append to the value log, when that
 * is above the vlog_gc_rate (default 4; 0: vlog_gc_rate alone is the limit).
 * Returns SETT_INVALID_ARGUMENT for NULL opts.
 */
int sett_options_set_vlog_gc_write_factor(struct sett_options_t *opts, uint32_t value);

/**
 * Largest key in bytes (default 65000). Returns SETT_INVALID_ARGUMENT for NULL opts.
 */
int sett_options_set_max_key_size(struct sett_options_t *opts, size_t value);

/**
 * Largest value in bytes (default 1 GiB). Returns SETT_INVALID_ARGUMENT for NULL opts.
 */
int sett_options_set_max_value_size(struct sett_options_t *opts, size_t value);

/**
 * Largest transaction in bytes written (default about 9.6 MiB). Returns SETT_INVALID_ARGUMENT for NULL opts.
 */
int sett_options_set_max_txn_size(struct sett_options_t *opts,
                                  size_t value);

/**
 * Bytes of recent changes the change feed keeps so that a subscription can
 * start from a past version (default 4 MiB; 0 keeps none). See sett_subscribe().
 * Returns SETT_INVALID_ARGUMENT for NULL opts.
 */
int sett_options_set_change_feed_history_bytes(struct sett_options_t *opts, size_t value);

/**
 * 1: size levels from the last one up (RocksDB's
 * level_compaction_dynamic_level_bytes): L0 compacts into the highest level
 * in use, and the levels above it stay empty; 0 (default): level 1 targets
 * level_base_size and each level below level_multiplier times more. Any
 * other value is SETT_INVALID_ARGUMENT.
 */
int sett_options_set_level_dynamic(struct sett_options_t *opts, uint32_t value);

/**
 * 1: fsync the WAL and value log once per write group; 0 (default): do not.
 * Any other value is SETT_INVALID_ARGUMENT.
 */
int sett_options_set_sync_writes(struct sett_options_t *opts, uint32_t value);

/**
 * 1: open read-only (shared with other read-only opens); 0 (default): read-write.
 * Any other value is SETT_INVALID_ARGUMENT.
 */
int sett_options_set_read_only(struct sett_options_t *opts, uint32_t value);

/**
 * Encryption at rest: every file of the database is encrypted with data keys
 * sealed under this 32-byte master key (default: none, not encrypted). The
 * bytes are copied; the caller may wipe its buffer after the call. A
 * database created with a key must always be opened with it: a wrong key
 * fails sett_open() with SETT_WRONG_ENCRYPTION_KEY, none with
 * SETT_ENCRYPTION_KEY_REQUIRED, and a key for a database created without one
 * with SETT_NOT_ENCRYPTED. key = NULL with len = 0 clears the key. Any other
 * length than 32, NULL key with len > 0, or NULL opts is
 * SETT_INVALID_ARGUMENT, and the options are left unchanged.
 */
int sett_options_set_encryption_key(struct sett_options_t *opts, const uint8_t *key, size_t len);

/**
 * How old the newest data key may get, in milliseconds, before a new one is
 * made for the files created from then on (default 10 days; 0: never by
 * age, only by sett_rotate_encryption_key()). Applies when a key is set
 * (sett_options_set_encryption_key(), before or after this call). Returns
 * SETT_INVALID_ARGUMENT for NULL opts.
 */
int sett_options_set_encryption_key_rotation_ms(struct sett_options_t *opts, uint64_t ms);

/**
 * Deletes every key in [start, end) with one record (a range tombstone,
 * RocksDB's DeleteRange), however many keys the range holds. Ordered,
 * atomic and durable like any write; writers do not wait for it, and
 * snapshots taken before it still see the keys. Compaction reclaims the
 * space later (sett_flatten() at once). An empty `end` (end_len 0) means
 * no upper bound; otherwise start < end is required (SETT_INVALID_ARGUMENT).
 * Thread-safe.
 */
int sett_delete_range(struct sett_db_t *db,
                      const uint8_t *start,
                      size_t start_len,
                      const uint8_t *end,
                      size_t end_len,
                      struct sett_error_t **err);

/**
 * Adds a delete of every key in [start, end) to the batch; operations added
 * before it on keys in the range are removed from the batch, later ones
 * are kept. The range is checked when the batch is written (as for
 * sett_delete_range()).
 */
int sett_batch_delete_range(struct sett_batch_t *batch,
                            const uint8_t *start,
                            size_t start_len,
                            const uint8_t *end,
                            size_t end_len);

/**
 * Buffers a delete of every key in [start, end) in a read-write transaction:
 * its reads and iterators stop seeing the range (and its own earlier writes
 * there); its later writes are kept. Applied at commit, atomically with the
 * rest of the transaction. The range is checked here (SETT_INVALID_ARGUMENT
 * unless start < end or end is empty).
 */
int sett_txn_delete_range(struct sett_txn_t *txn,
                          const uint8_t *start,
                          size_t start_len,
                          const uint8_t *end,
                          size_t end_len,
                          struct sett_error_t **err);

/**
 * Streams a backup to `write` (called with `ctx`): the live entries if `since`
 * is 0, else every version after `since`; the same bytes sett_backup() writes
 * to a file. *next_since (may be NULL) receives the `since` for the next
 * incremental backup. The database is only read: a callback that stops the
 * backup leaves it as it was. The callback runs on the calling thread and may
 * read the database, but must not close it.
 */
int sett_backup_to(struct sett_db_t *db,
                   uint64_t since,
                   sett_write_fn write,
                   void *ctx,
                   uint64_t *next_since,
                   struct sett_error_t **err);

/**
 * Restores a backup stream read through `read` (called with `ctx`); a full
 * backup needs an empty database. *entries (may be NULL) receives the number
 * of entries applied. As with sett_restore(), the stream is applied in chunks
 * of about 1 MiB as it is read: when the callback stops it, or the stream is
 * damaged or cut, the call fails (SETT_IO or SETT_CORRUPTION) and the entries
 * of the chunks before may be in the database (with their right values; a
 * stream under 1 MiB applies nothing). Empty the database with
 * sett_drop_all() before restoring a full backup again.
 */
int sett_restore_from(struct sett_db_t *db,
                      sett_read_fn read,
                      void *ctx,
                      uint64_t *entries,
                      struct sett_error_t **err);

/**
 * Begins a transaction: `update` 1 for read-write, 0 for read-only (other
 * values are SETT_INVALID_ARGUMENT). *txn receives the handle (NULL on failure).
 */
int sett_txn_begin(struct sett_db_t *db,
                   uint32_t update,
                   struct sett_txn_t **txn,
                   struct sett_error_t **err);

/**
 * Reads key as the transaction sees it (its snapshot plus its own writes).
 * Same contract as sett_get().
 */
int sett_txn_get(struct sett_txn_t *txn,
                 const uint8_t *key,
                 size_t keylen,
                 struct sett_buf_t *value,
                 struct sett_error_t **err);

/**
 * Reads key with its metadata as the transaction sees it: the same contract as
 * sett_get_entry(). Any of user_meta, expires_at, version may be NULL. For a
 * key this transaction wrote itself (not yet committed), *user_meta is the
 * meta it wrote, and *version and *expires_at are 0 (both are fixed at commit).
 */
int sett_txn_get_entry(struct sett_txn_t *txn,
                       const uint8_t *key,
                       size_t keylen,
                       struct sett_buf_t *value,
                       uint8_t *user_meta,
                       uint64_t *expires_at,
                       uint64_t *version,
                       struct sett_error_t **err);

/**
 * Buffers a put (applied at commit).
 */
int sett_txn_put(struct sett_txn_t *txn,
                 const uint8_t *key,
                 size_t keylen,
                 const uint8_t *val,
                 size_t vallen,
                 struct sett_error_t **err);

/**
 * Buffers a put with a user-meta byte and a TTL in milliseconds (0 = none).
 * SETT_TOO_BIG when the transaction would exceed its size limit (the put is not
 * taken; the transaction stays usable).
 */
int sett_txn_put_with(struct sett_txn_t *txn,
                      const uint8_t *key,
                      size_t keylen,
                      const uint8_t *val,
                      size_t vallen,
                      uint8_t user_meta,
                      uint64_t ttl_ms,
                      struct sett_error_t **err);

/**
 * Buffers a merge of `operand` into key (see sett_merge()); reads in the
 * transaction see it folded. SETT_MERGE_OPERATOR_MISSING when the database
 * has no merge operator; SETT_TOO_BIG as sett_txn_put_with() (the merge is
 * not taken either way; the transaction stays usable).
 */
int sett_txn_merge(struct sett_txn_t *txn,
                   const uint8_t *key,
                   size_t keylen,
                   const uint8_t *operand,
                   size_t operand_len,
                   struct sett_error_t **err);

/**
 * Buffers a delete.
 */
int sett_txn_delete(struct sett_txn_t *txn,
                    const uint8_t *key,
                    size_t keylen,
                    struct sett_error_t **err);

/**
 * Commits. SETT_CONFLICT when a key it read was written by a transaction that
 * committed after it began: begin a new one and retry. The transaction is
 * finished either way.
 */
int sett_txn_commit(struct sett_txn_t *txn, struct sett_error_t **err);

/**
 * Drops the buffered writes; the transaction is finished. Accepts NULL.
 */
void sett_txn_discard(struct sett_txn_t *txn);

/**
 * Releases a transaction handle (discarding it if still open). Accepts NULL.
 */
void sett_txn_free(struct sett_txn_t *txn);

#ifdef __cplusplus
}  // extern "C"
#endif  // __cplusplus

#endif  /* SETT_H */
