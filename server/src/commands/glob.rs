//! Glob matching as Redis's MATCH, KEYS and CONFIG GET use.

/// Glob matching as Redis's MATCH and CONFIG GET use: `*`, `?`, `[...]` with
/// ranges and `^`, and `\` escapes.
pub fn glob(pat: &[u8], s: &[u8]) -> bool {
    let (mut p, mut i) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while i < s.len() {
        if p < pat.len() {
            match pat[p] {
                b'*' => {
                    star = Some((p, i));
                    p += 1;
                    continue;
                }
                b'?' => {
                    p += 1;
                    i += 1;
                    continue;
                }
                b'[' => {
                    if let Some((ok, next)) = class(pat, p, s[i]) {
                        if ok {
                            p = next;
                            i += 1;
                            continue;
                        }
                    }
                }
                b'\\' if p + 1 < pat.len() && pat[p + 1] == s[i] => {
                    p += 2;
                    i += 1;
                    continue;
                }
                b'\\' if p + 1 < pat.len() => {}
                c if c == s[i] => {
                    p += 1;
                    i += 1;
                    continue;
                }
                _ => {}
            }
        }
        // Mismatch: let the last star take one more character.
        match star {
            Some((sp, si)) => {
                p = sp + 1;
                i = si + 1;
                star = Some((sp, si + 1));
            }
            None => return false,
        }
    }
    pat[p..].iter().all(|&c| c == b'*')
}

/// Whether `c` is in the class starting at `pat[p] == '['`, and the index after it.
fn class(pat: &[u8], p: usize, c: u8) -> Option<(bool, usize)> {
    let mut j = p + 1;
    let negate = pat.get(j) == Some(&b'^');
    if negate {
        j += 1;
    }
    let mut hit = false;
    loop {
        let &x = pat.get(j)?;
        if x == b']' {
            return Some((hit != negate, j + 1));
        }
        let x = if x == b'\\' {
            j += 1;
            *pat.get(j)?
        } else {
            x
        };
        if pat.get(j + 1) == Some(&b'-') && pat.get(j + 2).is_some_and(|&e| e != b']') {
            let e = pat[j + 2];
            let (lo, hi) = if x <= e { (x, e) } else { (e, x) };
            hit |= (lo..=hi).contains(&c);
            j += 3;
        } else {
            hit |= x == c;
            j += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn glob_handles_stars_classes_and_escapes() {
        let m = |p: &str, s: &str| glob(p.as_bytes(), s.as_bytes());
        assert!(m("*", ""));
        assert!(m("user:*", "user:42"));
        assert!(!m("user:*", "users:42"));
        assert!(m("h?llo", "hello") && !m("h?llo", "hllo"));
        assert!(m("h[ae]llo", "hallo") && !m("h[ae]llo", "hillo"));
        assert!(m("h[^e]llo", "hallo") && !m("h[^e]llo", "hello"));
        assert!(m("h[a-c]llo", "hbllo") && !m("h[a-c]llo", "hdllo"));
        assert!(m("a\\*b", "a*b") && !m("a\\*b", "axb"));
        assert!(m("*a*b*", "xxaxxbxx") && !m("*a*b*", "xxbxxaxx"));
    }
}
