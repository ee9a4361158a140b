//! `sett_buf_t`: bytes owned by the caller, allocated by sett.

/// Bytes returned by sett. `data` is NULL when `len` is 0. Owned by the caller:
/// free with sett_buf_free(). `cap` is private to sett.
#[repr(C)]
pub struct sett_buf_t {
    pub data: *mut u8,
    pub len: usize,
    pub cap: usize,
}

impl sett_buf_t {
    pub(crate) fn empty() -> sett_buf_t {
        sett_buf_t {
            data: std::ptr::null_mut(),
            len: 0,
            cap: 0,
        }
    }

    pub(crate) fn from_vec(v: Vec<u8>) -> sett_buf_t {
        if v.capacity() == 0 {
            return sett_buf_t::empty();
        }
        let mut v = std::mem::ManuallyDrop::new(v);
        sett_buf_t {
            data: v.as_mut_ptr(),
            len: v.len(),
            cap: v.capacity(),
        }
    }
}

/// Frees the bytes of `buf` and resets it to {NULL, 0, 0}. Accepts NULL and an
/// already freed or empty buffer.
#[no_mangle]
pub unsafe extern "C" fn sett_buf_free(buf: *mut sett_buf_t) {
    // SAFETY: a non-NULL buf points to a sett_buf_t the caller owns.
    let Some(b) = (unsafe { buf.as_mut() }) else {
        return;
    };
    if !b.data.is_null() && b.cap != 0 {
        // SAFETY: data/len/cap came from a Vec<u8> in from_vec and are freed once
        // (the struct is reset below).
        drop(unsafe { Vec::from_raw_parts(b.data, b.len, b.cap) });
    }
    *b = sett_buf_t::empty();
}
