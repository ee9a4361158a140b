//! Gives libsett.so its SONAME (libsett.so.<major>), so that programs linked
//! against one major version refuse another.

fn main() {
    let major = std::env::var("CARGO_PKG_VERSION_MAJOR").unwrap_or_else(|_| "0".into());
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libsett.so.{major}");
    println!("cargo:rerun-if-changed=build.rs");
}
