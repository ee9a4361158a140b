//! Compiles INCRBYFLOAT's long-double arithmetic (src/longdouble.c).

fn main() {
    cc::Build::new()
        .file("src/longdouble.c")
        .warnings(true)
        .compile("sett_longdouble");
    println!("cargo:rerun-if-changed=src/longdouble.c");
    println!("cargo:rerun-if-changed=build.rs");
}
