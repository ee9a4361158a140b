//! INCRBYFLOAT's sum, computed in C's long double as redis-server computes it
//! (see longdouble.c), so that every digit of the reply is the same.

/// Why a sum was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// An operand is not a float as Redis reads one.
    NotAFloat,
    /// The sum is NaN or infinite.
    NotFinite,
}

extern "C" {
    fn sett_ld_add(
        a: *const u8,
        alen: usize,
        b: *const u8,
        blen: usize,
        out: *mut u8,
        cap: usize,
        n: *mut usize,
    ) -> i32;
}

/// The text of `a + b`, both given as text.
pub fn add(a: &[u8], b: &[u8]) -> Result<Vec<u8>, Refused> {
    // %.17Lf of the largest long double is under 5000 characters.
    let mut out = vec![0u8; 5200];
    let mut n = 0usize;
    // SAFETY: the pointers and lengths describe live slices (`a`, `b` read-only,
    // `out` writable for its whole length); the C side reads at most alen/blen
    // bytes, writes at most cap bytes to out, and writes one usize through n.
    let rc = unsafe {
        sett_ld_add(
            a.as_ptr(),
            a.len(),
            b.as_ptr(),
            b.len(),
            out.as_mut_ptr(),
            out.len(),
            &mut n,
        )
    };
    match rc {
        0 => {
            out.truncate(n);
            Ok(out)
        }
        1 => Err(Refused::NotAFloat),
        _ => Err(Refused::NotFinite),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_print_as_redis_prints_long_doubles() {
        let s = |a: &str, b: &str| {
            add(a.as_bytes(), b.as_bytes()).map(|v| String::from_utf8_lossy(&v).into_owned())
        };
        assert_eq!(s("10.5", "0.1"), Ok("10.6".into()));
        // Long double, not f64: f64 would print 5010.6000000000003638.
        assert_eq!(s("10.6", "5.0e3"), Ok("5010.60000000000000009".into()));
        assert_eq!(s("-0.0", "0"), Ok("0".into()));
        assert_eq!(s("1.5e3", "0"), Ok("1500".into()));
        assert_eq!(s("0x10", "1"), Ok("17".into()));
        assert_eq!(s(" 1", "1"), Err(Refused::NotAFloat));
        assert_eq!(s("1 ", "1"), Err(Refused::NotAFloat));
        assert_eq!(s("abc", "1"), Err(Refused::NotAFloat));
        assert_eq!(s("", "1"), Err(Refused::NotAFloat));
        assert_eq!(s("nan", "1"), Err(Refused::NotAFloat));
        assert_eq!(s("1", "inf"), Err(Refused::NotFinite));
    }
}
