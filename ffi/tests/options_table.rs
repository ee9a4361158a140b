//! Every binding checked against core's table of options (`sett::options::OPTIONS`):
//! the C setters of include/sett.h, the Go `Options` struct and its `cOptions`
//! (bindings-go/options.go) and the `OpenOptions` keys of the Python stubs
//! (bindings-python/python/sett/_sett.pyi). Each must name every option of the
//! table and no other, with a type that fits the option's kind, and where a
//! binding's doc states a default, it must be the table's. Python's keyword
//! arguments themselves go through the table at run time (bindings-python/src/db.rs).

use sett_core::options::{OptionKind, OptionSpec, OptionValue, OPTIONS};
use std::path::PathBuf;

/// Go's names for the options Badger also has (Badger's `Options` field
/// names); every other option is the table's name in CamelCase.
const GO_NAMES: [(&str, &str); 16] = [
    ("memtable_size", "MemTableSize"),
    ("max_memtables", "NumMemtables"),
    ("table_size", "BaseTableSize"),
    ("level_base_size", "BaseLevelSize"),
    ("level_multiplier", "LevelSizeMultiplier"),
    ("num_levels", "MaxLevels"),
    ("l0_compaction_trigger", "NumLevelZeroTables"),
    ("l0_slowdown_trigger", "NumLevelZeroTablesSlowdown"),
    ("l0_stop_trigger", "NumLevelZeroTablesStall"),
    ("compaction_threads", "NumCompactors"),
    ("vlog_file_size", "ValueLogFileSize"),
    ("vlog_gc_ratio", "ValueLogGCRatio"),
    ("vlog_gc_idle_ratio", "ValueLogGCIdleRatio"),
    ("vlog_gc_rate", "ValueLogGCRate"),
    ("vlog_gc_write_factor", "ValueLogGCWriteFactor"),
    ("zstd_level", "ZSTDCompressionLevel"),
];

/// Options that are fields of `Options` but not rows of the table, because
/// their value is code (`Options::merge_operator`, a trait object): each
/// binding chooses one by name with a setter or field of its own.
const OUTSIDE_TABLE: [&str; 1] = ["merge_operator"];
/// Settings every binding has outside the table, as core's `Options` has
/// `encryption` outside it (the table's values are printable, a key is
/// not): their names as the C setters and Go's fields (in snake case) spell
/// them. Python takes them as keyword arguments of `open` beside
/// `OpenOptions`. Each must exist in both bindings (checked below).
const NOT_IN_TABLE: [&str; 2] = ["encryption_key", "encryption_key_rotation_ms"];
/// Go's names of the same settings, Badger's: a duration is a `time.Duration`.
const GO_NOT_IN_TABLE: [&str; 2] = ["encryption_key", "encryption_key_rotation_duration"];

/// `declared` without the settings that are outside the table.
fn in_table_only(declared: Vec<Declared>, outside: &[&str]) -> Vec<Declared> {
    declared
        .into_iter()
        .filter(|d| !outside.contains(&d.option.as_str()))
        .collect()
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn read(rel: &str) -> String {
    let path = root().join(rel);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// One option as a binding declares it: its name in the table's spelling,
/// the type the binding gives it, and the doc above it.
#[derive(Debug, Clone)]
struct Declared {
    option: String,
    ty: String,
    doc: String,
}

/// The options a binding lacks and those it names that the table does not.
fn name_gaps(table: &[&str], binding: &[Declared]) -> Vec<String> {
    let mut out = Vec::new();
    for name in table {
        if !binding.iter().any(|d| d.option == *name) {
            out.push(format!("{name}: missing"));
        }
    }
    for d in binding {
        if !table.contains(&d.option.as_str()) && !OUTSIDE_TABLE.contains(&d.option.as_str()) {
            out.push(format!("{}: not in OPTIONS", d.option));
        }
    }
    out
}

fn table_names() -> Vec<&'static str> {
    OPTIONS.iter().map(|s| s.name).collect()
}

// --- reading each binding -------------------------------------------------

/// `int sett_options_set_<name>(struct sett_options_t *opts, <type> value)`
/// declarations of a header, with the `/** ... */` doc above each.
fn c_setters(header: &str) -> Vec<Declared> {
    let mut out = Vec::new();
    let mut rest = header;
    while let Some(at) = rest.find("int sett_options_set_") {
        let before = &rest[..at];
        let doc = match (before.rfind("/**"), before.rfind("*/")) {
            (Some(open), Some(close)) if open < close && before[close..].trim() == "*/" => before
                [open + 3..close]
                .lines()
                .map(|l| l.trim().trim_start_matches('*').trim())
                .collect::<Vec<_>>()
                .join(" "),
            _ => String::new(),
        };
        let decl = &rest[at + "int sett_options_set_".len()..];
        let end = decl.find(");").unwrap_or(decl.len());
        let (name, params) = decl[..end].split_once('(').unwrap_or((&decl[..end], ""));
        // The type of every parameter after `opts`, without the parameter names.
        let ty = params
            .split(',')
            .skip(1)
            .map(|p| {
                let words = p.split_whitespace().collect::<Vec<_>>();
                let (name, ty) = words.split_last().unwrap_or((&"", &[]));
                // A pointer's `*` sits on the name: it belongs to the type.
                let stars = "*".repeat(name.chars().take_while(|&c| c == '*').count());
                [ty.join(" "), stars].join(" ").trim().to_string()
            })
            .collect::<Vec<_>>()
            .join(", ");
        out.push(Declared {
            option: name.trim().to_string(),
            ty,
            doc,
        });
        rest = &decl[end..];
    }
    out
}

/// The body of `type <name> struct {` or `func ... <name>(` up to the closing
/// brace at the start of a line.
fn go_block<'a>(src: &'a str, opening: &str) -> &'a str {
    let start = src
        .find(opening)
        .unwrap_or_else(|| panic!("no `{opening}` in bindings-go/options.go"));
    let body = &src[start + opening.len()..];
    &body[..body.find("\n}").unwrap_or(body.len())]
}

fn snake(camel: &str) -> String {
    let mut out = String::new();
    for (i, c) in camel.chars().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            out.push('_');
        }
        out.push(c.to_ascii_lowercase());
    }
    out
}

/// The fields of Go's `Options`, named as the table names them, with the
/// `// Field: ...` comment above each.
fn go_fields(src: &str) -> Vec<Declared> {
    let mut out = Vec::new();
    let mut doc = String::new();
    for line in go_block(src, "type Options struct {").lines() {
        let line = line.trim();
        if let Some(c) = line.strip_prefix("//") {
            doc.push_str(c.trim());
            doc.push(' ');
            continue;
        }
        let mut words = line.split_whitespace();
        if let (Some(field), Some(ty)) = (words.next(), words.next()) {
            let option = GO_NAMES
                .iter()
                .find(|(_, go)| *go == field)
                .map_or_else(|| snake(field), |(core, _)| core.to_string());
            out.push(Declared {
                option,
                ty: ty.to_string(),
                doc: std::mem::take(&mut doc),
            });
        }
        doc.clear();
    }
    out
}

/// The keys of `class OpenOptions(TypedDict, total=False):` in the stubs.
fn pyi_keys(src: &str) -> Vec<Declared> {
    let start = src
        .find("class OpenOptions(TypedDict, total=False):")
        .unwrap_or_else(|| panic!("no OpenOptions TypedDict in _sett.pyi"));
    let mut out = Vec::new();
    for line in src[start..].lines().skip(1) {
        if !line.is_empty() && !line.starts_with(' ') {
            break;
        }
        if let Some((key, ty)) = line.trim().split_once(": ") {
            if key
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
            {
                out.push(Declared {
                    option: key.to_string(),
                    ty: ty.trim().to_string(),
                    doc: String::new(),
                });
            }
        }
    }
    out
}

// --- types and defaults -----------------------------------------------------

/// The types each binding may give an option of `kind`.
fn types_for(kind: OptionKind, binding: &str) -> &'static [&'static str] {
    use OptionKind::*;
    match (binding, kind) {
        // cache_size is a usize in Rust and a uint64_t in C.
        ("c", Usize) => &["size_t", "uint64_t"],
        ("c", U64) => &["uint64_t"],
        ("c", U32) | ("c", Bool) => &["uint32_t"],
        ("c", I32) | ("c", Codec) => &["int"],
        ("c", F64) => &["double"],
        ("c", CodecList) => &["const int *, size_t"],
        ("go", Usize | U64 | U32 | I32) => &["int", "int64"],
        ("go", Bool) => &["bool"],
        ("go", F64) => &["float64"],
        ("go", Codec) => &["Compression"],
        ("go", CodecList) => &["[]Compression"],
        ("py", Usize | U64 | U32 | I32) => &["int"],
        ("py", Bool) => &["bool"],
        ("py", F64) => &["float"],
        ("py", Codec) => &["str"],
        ("py", CodecList) => &["List[str]"],
        _ => &[],
    }
}

fn type_mismatches(binding: &str, declared: &[Declared]) -> Vec<String> {
    let mut out = Vec::new();
    for d in declared {
        if let Some(spec) = OPTIONS.iter().find(|s| s.name == d.option) {
            let ok = types_for(spec.kind, binding);
            if !ok.contains(&d.ty.as_str()) {
                out.push(format!(
                    "{}: {binding} type `{}` for a {} option (expected one of {ok:?})",
                    d.option,
                    d.ty,
                    spec.kind.name()
                ));
            }
        }
    }
    out
}

/// `"16 MiB"`, `"64 MiB/s"`, `"1024"` or `"0.5"` as a number.
fn parse_amount(text: &str) -> Option<f64> {
    let mut words = text.split_whitespace();
    let n: f64 = words.next()?.parse().ok()?;
    let scale = match words.next().map(|u| u.trim_end_matches("/s")) {
        Some("KiB") => 1u64 << 10,
        Some("MiB") => 1 << 20,
        Some("GiB") => 1 << 30,
        Some("TiB") => 1 << 40,
        _ => 1,
    };
    Some(n * scale as f64)
}

/// The default a doc states ("(default 16 MiB)", "default about 9.6 MiB",
/// "0 (default)"), checked against the table's. `None`: it states none.
fn stated_default(spec: &OptionSpec, doc: &str) -> Option<Result<(), String>> {
    let wrong = |said: &str| {
        Err(format!(
            "{}: doc says default {said:?}, table has {:?}",
            spec.name, spec.default
        ))
    };
    if let OptionValue::Bool(b) = spec.default {
        let said = if doc.contains("0 (default)") || doc.contains("default false") {
            false
        } else if doc.contains("1 (default)") || doc.contains("default true") {
            true
        } else {
            return None;
        };
        return Some(if said == b {
            Ok(())
        } else {
            wrong(&said.to_string())
        });
    }
    let at = doc.find("default ")?;
    let said: String = doc[at + "default ".len()..]
        .chars()
        .take_while(|c| !matches!(c, ';' | ')' | ',' | ':'))
        .collect();
    let said = said.trim().trim_end_matches('.').to_string();
    Some(match &spec.default {
        OptionValue::Codec(c) => {
            let name = c.name();
            let c_name = format!("SETT_COMPRESSION_{}", name.to_ascii_uppercase());
            let go_name = format!(
                "Compression{}{}",
                name[..1].to_ascii_uppercase(),
                &name[1..]
            );
            if said == c_name || said == go_name {
                Ok(())
            } else {
                wrong(&said)
            }
        }
        OptionValue::Int(v) => {
            let (about, amount) = match said.strip_prefix("about ") {
                Some(rest) => (true, rest),
                None => (false, said.as_str()),
            };
            match parse_amount(amount) {
                // "about": within 1%.
                Some(n) if about && (n - *v as f64).abs() <= *v as f64 / 100.0 => Ok(()),
                Some(n) if !about && n == *v as f64 => Ok(()),
                _ => wrong(&said),
            }
        }
        OptionValue::Float(f) => match parse_amount(&said) {
            Some(n) if n == *f => Ok(()),
            _ => wrong(&said),
        },
        OptionValue::Bool(_) | OptionValue::Codecs(_) => return None,
    })
}

/// Wrong defaults in a binding's docs, and options whose doc states none
/// (every option but a list, whose default is empty, must state it).
fn default_problems(binding: &str, declared: &[Declared]) -> Vec<String> {
    let mut out = Vec::new();
    for d in declared {
        let Some(spec) = OPTIONS.iter().find(|s| s.name == d.option) else {
            continue;
        };
        match stated_default(spec, &d.doc) {
            Some(Ok(())) => {}
            Some(Err(e)) => out.push(format!("{binding}: {e}")),
            None if spec.kind == OptionKind::CodecList => {}
            None => out.push(format!(
                "{binding}: {}: the doc states no default",
                spec.name
            )),
        }
    }
    out
}

// --- the checks -------------------------------------------------------------

#[test]
fn every_option_has_a_c_setter_of_its_type_and_its_default_and_no_setter_is_extra() {
    let setters = in_table_only(c_setters(&read("include/sett.h")), &NOT_IN_TABLE);
    let mut problems = name_gaps(&table_names(), &setters);
    problems.extend(type_mismatches("c", &setters));
    problems.extend(default_problems("sett.h", &setters));
    assert!(
        problems.is_empty(),
        "include/sett.h against OPTIONS:\n{}",
        problems.join("\n")
    );
}

#[test]
fn every_option_is_a_field_of_go_options_of_its_type_and_default_and_reaches_its_setter() {
    let src = read("bindings-go/options.go");
    let fields = in_table_only(go_fields(&src), &GO_NOT_IN_TABLE);
    let mut problems = name_gaps(&table_names(), &fields);
    problems.extend(type_mismatches("go", &fields));
    problems.extend(default_problems("options.go", &fields));
    let c_options = go_block(
        &src,
        "func (o *Options) cOptions() (*C.sett_options_t, error) {",
    );
    for name in table_names() {
        if !c_options.contains(&format!("C.sett_options_set_{name}(")) {
            problems.push(format!(
                "{name}: cOptions never calls sett_options_set_{name}"
            ));
        }
    }
    assert!(
        problems.is_empty(),
        "bindings-go/options.go against OPTIONS:\n{}",
        problems.join("\n")
    );
}

#[test]
fn every_option_is_a_key_of_the_python_stubs_open_options_of_its_type() {
    let keys = pyi_keys(&read("bindings-python/python/sett/_sett.pyi"));
    let mut problems = name_gaps(&table_names(), &keys);
    problems.extend(type_mismatches("py", &keys));
    assert!(
        problems.is_empty(),
        "_sett.pyi OpenOptions against OPTIONS:\n{}",
        problems.join("\n")
    );
}

#[test]
fn the_settings_outside_the_table_exist_in_c_and_go_and_are_not_in_the_table() {
    let setters = c_setters(&read("include/sett.h"));
    let src = read("bindings-go/options.go");
    let fields = go_fields(&src);
    let c_options = go_block(
        &src,
        "func (o *Options) cOptions() (*C.sett_options_t, error) {",
    );
    for (c, go) in NOT_IN_TABLE.iter().zip(GO_NOT_IN_TABLE) {
        assert!(
            !table_names().contains(c),
            "{c} is in OPTIONS: drop it from NOT_IN_TABLE"
        );
        assert!(
            setters.iter().any(|d| d.option == *c),
            "include/sett.h has no sett_options_set_{c}"
        );
        assert!(
            fields.iter().any(|d| d.option == go),
            "bindings-go/options.go has no field for {go}"
        );
        assert!(
            c_options.contains(&format!("C.sett_options_set_{c}(")),
            "cOptions never calls sett_options_set_{c}"
        );
    }
}

#[test]
fn go_names_map_only_options_of_the_table() {
    for (core, go) in GO_NAMES {
        assert!(
            table_names().contains(&core),
            "GO_NAMES maps {core} (-> {go}), not in OPTIONS"
        );
    }
}

// --- the checks can fail ----------------------------------------------------

const HEADER_SAMPLE: &str = "
/**
 * Memtable size in bytes (default 8 MiB). Returns SETT_INVALID_ARGUMENT for NULL opts.
 */
int sett_options_set_memtable_size(struct sett_options_t *opts, size_t value);

/**
 * Something sett does not have (default 1).
 */
int sett_options_set_no_such_option(struct sett_options_t *opts, double value);

/**
 * 1: fsync; 0 (default): do not.
 */
int sett_options_set_sync_writes(struct sett_options_t *opts, uint32_t value);
";

#[test]
fn a_header_missing_a_setter_or_naming_an_extra_one_is_reported_by_name() {
    let setters = c_setters(HEADER_SAMPLE);
    let names: Vec<&str> = setters.iter().map(|d| d.option.as_str()).collect();
    assert_eq!(names, ["memtable_size", "no_such_option", "sync_writes"]);
    let gaps = name_gaps(&table_names(), &setters);
    assert!(
        gaps.contains(&"value_threshold: missing".to_string()),
        "{gaps:?}"
    );
    assert!(
        gaps.contains(&"no_such_option: not in OPTIONS".to_string()),
        "{gaps:?}"
    );
    assert!(
        !gaps.iter().any(|g| g.starts_with("memtable_size")),
        "{gaps:?}"
    );
}

#[test]
fn a_binding_missing_one_option_is_reported_naming_that_option_alone() {
    let all: Vec<Declared> = table_names()
        .iter()
        .map(|n| Declared {
            option: n.to_string(),
            ty: String::new(),
            doc: String::new(),
        })
        .collect();
    assert!(name_gaps(&table_names(), &all).is_empty());
    let without: Vec<Declared> = all
        .iter()
        .filter(|d| d.option != "vlog_gc_rate")
        .cloned()
        .collect();
    assert_eq!(
        name_gaps(&table_names(), &without),
        ["vlog_gc_rate: missing"]
    );
}

#[test]
fn a_wrong_default_or_type_in_a_binding_doc_is_reported() {
    let setters = c_setters(HEADER_SAMPLE);
    let problems = default_problems("sample", &setters);
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(
        problems[0].contains("memtable_size") && problems[0].contains("8 MiB"),
        "{problems:?}"
    );
    let mut wrong_type = setters.clone();
    wrong_type[0].ty = "double".into();
    let problems = type_mismatches("c", &wrong_type);
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(
        problems[0].starts_with("memtable_size: c type `double`"),
        "{problems:?}"
    );
    // A doc stating no default is reported too.
    let mut silent = setters;
    silent[0].doc = "Memtable size in bytes.".into();
    let problems = default_problems("sample", &silent[..1]);
    assert_eq!(
        problems,
        ["sample: memtable_size: the doc states no default"]
    );
}

#[test]
fn go_fields_and_stub_keys_are_read_with_their_names_types_and_docs() {
    let go = "type Options struct {\n\t// MemTableSize: bytes (default 16 MiB).\n\tMemTableSize int\n\t// ReadOnly: open read-only.\n\tReadOnly bool\n}\n";
    let fields = go_fields(go);
    assert_eq!(fields.len(), 2);
    assert_eq!(
        (fields[0].option.as_str(), fields[0].ty.as_str()),
        ("memtable_size", "int")
    );
    assert!(
        fields[0].doc.contains("default 16 MiB"),
        "{:?}",
        fields[0].doc
    );
    assert_eq!(fields[1].option, "read_only");
    assert_eq!(
        default_problems("go", &fields),
        ["go: read_only: the doc states no default"]
    );
    let pyi = "class OpenOptions(TypedDict, total=False):\n    \"\"\"Doc.\"\"\"\n\n    sync_writes: bool\n    vlog_gc_ratio: int\n\nclass X: ...\n";
    let keys = pyi_keys(pyi);
    let names: Vec<&str> = keys.iter().map(|d| d.option.as_str()).collect();
    assert_eq!(names, ["sync_writes", "vlog_gc_ratio"]);
    let problems = type_mismatches("py", &keys);
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(
        problems[0].starts_with("vlog_gc_ratio: py type `int`"),
        "{problems:?}"
    );
}
