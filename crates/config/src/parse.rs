//! Reading a TOML config: a parse error becomes one [`ConfigError`] naming
//! the dotted key and its line, so every loader of the project (simulators
//! and runtime daemons alike) reports a bad file the same way.

use serde::de::DeserializeOwned;

use crate::error::ConfigError;

/// Deserialize `text`; a syntax or type error names the key it is about.
/// Semantic checks are the caller's (`validate`).
pub fn from_toml<T: DeserializeOwned>(text: &str) -> Result<T, ConfigError> {
    toml::from_str(text).map_err(|e| toml_error(text, &e))
}

/// A key a config file no longer accepts and what replaced it: loading a
/// file that still has it fails with one line naming the new keys, rather
/// than with serde's list of every key the table allows.
#[derive(Clone, Copy, Debug)]
pub struct Renamed {
    /// Dotted path of the table holding the key (`schedulers`).
    pub table: &'static str,
    pub key: &'static str,
    /// The keys to use instead, with what each means.
    pub use_instead: &'static str,
}

/// [`from_toml`], refusing the `renamed` keys by name.
pub fn from_toml_renamed<T: DeserializeOwned>(
    text: &str,
    renamed: &[Renamed],
) -> Result<T, ConfigError> {
    toml::from_str(text).map_err(|e| {
        let mut error = toml_error(text, &e);
        let unknown = e
            .message()
            .strip_prefix("unknown field `")
            .and_then(|rest| rest.split('`').next());
        let in_table = |table: &str| {
            error
                .field
                .strip_prefix(table)
                .is_some_and(|rest| rest.starts_with(['.', ' ']))
        };
        if let Some(r) = renamed
            .iter()
            .find(|r| unknown == Some(r.key) && in_table(r.table))
        {
            error.msg = format!("`{}` is renamed: use {}", r.key, r.use_instead);
        }
        error
    })
}

/// A TOML parse error as one line naming the key and its line
/// (`workload.load (line 6): invalid type …`).
pub fn toml_error(text: &str, e: &toml::de::Error) -> ConfigError {
    let msg = e.message().replace('\n', " ");
    let field = match e.span() {
        Some(span) => field_at(text, span.start),
        None => msg.split('`').nth(1).unwrap_or("config").to_string(),
    };
    ConfigError::new(field, msg)
}

/// The dotted key being defined at byte `offset` of a TOML text, with its
/// line: `sweep.policies (line 6)`. Good enough for error messages: the table
/// is the nearest `[header]` above, the key what precedes `=` on the line.
fn field_at(text: &str, offset: usize) -> String {
    let offset = offset.min(text.len());
    let line_no = text[..offset].matches('\n').count() + 1;
    let line_start = text[..offset].rfind('\n').map_or(0, |i| i + 1);
    let line = text[line_start..].lines().next().unwrap_or("");
    let key = line.split('=').next().unwrap_or("").trim();
    let table = text[..line_start]
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| l.starts_with('['))
        .map(|l| l.trim_matches(|c| c == '[' || c == ']').trim().to_string());
    let field = match (table, key.starts_with('[') || key.is_empty()) {
        (_, true) => key.trim_matches(|c| c == '[' || c == ']').to_string(),
        (Some(t), false) => format!("{t}.{key}"),
        (None, false) => key.to_string(),
    };
    format!("{field} (line {line_no})")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Doc {
        seed: u64,
        #[serde(default)]
        workload: Option<Workload>,
    }

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Workload {
        load: f64,
    }

    #[test]
    fn a_renamed_key_is_refused_naming_its_successor() {
        let renamed = [Renamed {
            table: "workload",
            key: "level",
            use_instead: "`load`",
        }];
        let e =
            from_toml_renamed::<Doc>("seed = 1\n[workload]\nlevel = 0.5\n", &renamed).unwrap_err();
        assert_eq!(
            e.to_string(),
            "workload.level (line 3): `level` is renamed: use `load`"
        );
        // Elsewhere the key is just unknown.
        let e = from_toml_renamed::<Doc>("seed = 1\nlevel = 0.5\n", &renamed).unwrap_err();
        assert!(e.msg.starts_with("unknown field `level`"), "{e}");
        let ok = from_toml_renamed::<Doc>("seed = 1\n[workload]\nload = 0.5\n", &renamed);
        assert_eq!(ok.unwrap().workload.unwrap().load, 0.5);
    }

    #[test]
    fn errors_name_the_key_and_its_line() {
        let e = from_toml::<Doc>("seed = 1\n[workload]\nload = \"high\"\n").unwrap_err();
        assert_eq!(e.field, "workload.load (line 3)");
        assert!(e.msg.contains("invalid type"), "{e}");
        let e = from_toml::<Doc>("seed = -1\n").unwrap_err();
        assert_eq!(e.field, "seed (line 1)");
        let e = from_toml::<Doc>("seed = 1\n[workload]\nload = 0.5\nbogus = 1\n").unwrap_err();
        assert_eq!(e.field, "workload.bogus (line 4)");
        assert_eq!(e.to_string().lines().count(), 1);
    }
}
