// One C++ translation unit including sett.h: proves the extern "C" block links.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdlib.h>
#include <string>

#include "sett.h"

int main() {
    char dir[] = "/tmp/sett-cpptest-XXXXXX";
    if (mkdtemp(dir) == nullptr) return 2;
    sett_db_t *db = nullptr;
    sett_error_t *err = nullptr;
    int failed = 0;
    if (sett_open(dir, nullptr, &db, &err) != SETT_OK) {
        std::fprintf(stderr, "open: %s\n", sett_error_message(err));
        sett_error_free(err);
        return 1;
    }
    const std::string key = "cpp", value = "works";
    if (sett_put(db, reinterpret_cast<const uint8_t *>(key.data()), key.size(),
                 reinterpret_cast<const uint8_t *>(value.data()), value.size(), &err) != SETT_OK)
        failed++;
    sett_buf_t v{};
    if (sett_get(db, reinterpret_cast<const uint8_t *>(key.data()), key.size(), &v, &err) != SETT_OK ||
        std::string(reinterpret_cast<char *>(v.data), v.len) != value)
        failed++;
    sett_buf_free(&v);
    if (sett_close(db, &err) != SETT_OK) failed++;
    sett_db_free(db);
    std::string rm = std::string("rm -rf ") + dir;
    if (std::system(rm.c_str()) != 0) failed++;
    std::printf("%d passed, %d failed\n", 4 - failed, failed);
    return failed == 0 ? 0 : 1;
}
