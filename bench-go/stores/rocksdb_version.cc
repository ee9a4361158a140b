// The version of the RocksDB this package links, read from the library at run
// time (GetRocksVersionAsString is compiled into it), so that a report cannot
// name another build than the one it measured.
#include <string>

#include "rocksdb/version.h"

extern "C" const char *rk_version(void) {
  static const std::string v = ROCKSDB_NAMESPACE::GetRocksVersionAsString(true);
  return v.c_str();
}
