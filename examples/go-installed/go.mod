module example.com/sett-installed

go 1.22

require github.com/sett-db/sett-go v0.0.0

// In a real program, drop this line once the module is published; `make
// go-install-check` copies this folder to a temporary directory and points the
// replace at the repository's bindings-go.
replace github.com/sett-db/sett-go => ../../bindings-go
