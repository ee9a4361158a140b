//! A small argument reader: positional words and `--flag value` / `--switch`.

use std::collections::HashMap;

pub struct Args {
    pub positional: Vec<String>,
    flags: HashMap<String, Option<String>>,
}

impl Args {
    /// Parses `args`; `switches` are the flags that take no value.
    pub fn parse(args: &[String], switches: &[&str]) -> Result<Args, String> {
        let mut positional = Vec::new();
        let mut flags = HashMap::new();
        let mut it = args.iter();
        while let Some(a) = it.next() {
            if let Some(name) = a.strip_prefix("--") {
                if switches.contains(&name) {
                    flags.insert(name.to_string(), None);
                } else {
                    let v = it.next().ok_or_else(|| format!("--{name} needs a value"))?;
                    flags.insert(name.to_string(), Some(v.clone()));
                }
            } else {
                positional.push(a.clone());
            }
        }
        Ok(Args { positional, flags })
    }

    pub fn has(&self, name: &str) -> bool {
        self.flags.contains_key(name)
    }

    pub fn str(&self, name: &str) -> Option<&str> {
        self.flags.get(name).and_then(|v| v.as_deref())
    }

    pub fn num<T: std::str::FromStr>(&self, name: &str, default: T) -> Result<T, String> {
        match self.str(name) {
            None => Ok(default),
            Some(v) => v
                .parse()
                .map_err(|_| format!("--{name}: `{v}` is not a valid number")),
        }
    }

    /// Rejects flags outside `known`.
    pub fn only(&self, known: &[&str]) -> Result<(), String> {
        match self.flags.keys().find(|k| !known.contains(&k.as_str())) {
            Some(k) => Err(format!("unknown flag --{k}")),
            None => Ok(()),
        }
    }

    pub fn dir(&self) -> Result<&str, String> {
        self.positional
            .first()
            .map(String::as_str)
            .ok_or_else(|| "missing the database directory".to_string())
    }
}
