//! The stable C ABI of sett. A thin layer over the `sett` crate: it converts
//! pointers to slices, results to status codes, and catches panics. No engine
//! logic lives here. `include/sett.h` is generated from this crate by cbindgen.
#![allow(non_camel_case_types)]
#![allow(clippy::missing_safety_doc)] // the safety contract of each export is in sett.h

mod admin;
mod batch;
mod buf;
mod checkpoint;
mod db;
mod error;
mod feed;
mod inspect;
mod iter;
mod keyspace;
mod options;
mod range;
mod store;
mod stream;
mod txn;
mod util;

pub use admin::*;
pub use batch::*;
pub use buf::*;
pub use checkpoint::*;
pub use db::*;
pub use error::*;
pub use feed::*;
pub use inspect::*;
pub use iter::*;
pub use keyspace::*;
pub use options::*;
pub use range::*;
pub use stream::*;
pub use txn::*;

use std::ffi::c_char;

/// Major version of this header; must equal sett_version_number() / 10000.
pub const SETT_VERSION_MAJOR: u32 = 0;
/// Minor version of this header.
pub const SETT_VERSION_MINOR: u32 = 1;
/// Patch version of this header.
pub const SETT_VERSION_PATCH: u32 = 0;
/// MAJOR * 10000 + MINOR * 100 + PATCH of this header.
pub const SETT_VERSION_NUMBER: u32 = 100;

/// The version of the loaded library: MAJOR * 10000 + MINOR * 100 + PATCH.
/// Compare with SETT_VERSION_NUMBER to catch a header/library mismatch.
#[no_mangle]
pub extern "C" fn sett_version_number() -> u32 {
    let part = |s: &str| s.parse::<u32>().unwrap_or(0);
    part(env!("CARGO_PKG_VERSION_MAJOR")) * 10000
        + part(env!("CARGO_PKG_VERSION_MINOR")) * 100
        + part(env!("CARGO_PKG_VERSION_PATCH"))
}

/// The version of the loaded library as a static string ("0.1.0"); never freed.
#[no_mangle]
pub extern "C" fn sett_version_string() -> *const c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_version_constants_agree_with_cargo_toml() {
        let v = |s: &str| s.parse::<u32>().unwrap();
        assert_eq!(SETT_VERSION_MAJOR, v(env!("CARGO_PKG_VERSION_MAJOR")));
        assert_eq!(SETT_VERSION_MINOR, v(env!("CARGO_PKG_VERSION_MINOR")));
        assert_eq!(SETT_VERSION_PATCH, v(env!("CARGO_PKG_VERSION_PATCH")));
        assert_eq!(
            SETT_VERSION_NUMBER,
            SETT_VERSION_MAJOR * 10000 + SETT_VERSION_MINOR * 100 + SETT_VERSION_PATCH
        );
        assert_eq!(sett_version_number(), SETT_VERSION_NUMBER);
    }
}
