//! Structured log lines (logfmt) on stderr.

use std::fmt::{Display, Write as _};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// One structured log line on stderr: `ts=… level=… comp=… msg="…" k=v …`.
pub fn log(level: &str, comp: &str, msg: &str, kv: &[(&str, &dyn Display)]) {
    let ts = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    eprintln!("{}", log_line(ts, level, comp, msg, kv));
}

/// The logfmt line of [`log`]: `key=value` pairs, a value quoted (with `"`
/// and `\` escaped) when it is empty or holds a space, `=`, `"`, `\` or a
/// control character, so `pool=1 rack=2` inside a value cannot read as two
/// keys.
fn log_line(
    ts: Duration,
    level: &str,
    comp: &str,
    msg: &str,
    kv: &[(&str, &dyn Display)],
) -> String {
    let mut line = format!("ts={}.{:06}", ts.as_secs(), ts.subsec_micros());
    let mut value = String::new();
    let fields: [(&str, &dyn Display); 3] = [("level", &level), ("comp", &comp), ("msg", &msg)];
    for (k, v) in fields.iter().chain(kv) {
        value.clear();
        let _ = write!(value, "{v}");
        let _ = write!(line, " {k}=");
        push_logfmt_value(&mut line, &value, *k == "msg");
    }
    line
}

fn push_logfmt_value(out: &mut String, v: &str, always_quote: bool) {
    let needs_quotes = always_quote
        || v.is_empty()
        || v.chars()
            .any(|c| c == ' ' || c == '=' || c == '"' || c == '\\' || c.is_control());
    if !needs_quotes {
        out.push_str(v);
        return;
    }
    out.push('"');
    for c in v.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c if c.is_control() => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_values_are_quoted_when_they_would_split() {
        let pool = "pool=1 rack=2";
        let from = format!("{:?}", ["127.0.0.1:1", "127.0.0.1:2"]);
        let line = log_line(
            Duration::new(12, 3_000),
            "warn",
            "switch",
            "say \"hi\"",
            &[
                ("node", &pool),
                ("from", &from),
                ("n", &7),
                ("empty", &""),
                ("path", &"a\\b\nc"),
            ],
        );
        assert_eq!(
            line,
            "ts=12.000003 level=warn comp=switch msg=\"say \\\"hi\\\"\" node=\"pool=1 rack=2\" \
             from=\"[\\\"127.0.0.1:1\\\", \\\"127.0.0.1:2\\\"]\" n=7 empty=\"\" \
             path=\"a\\\\b\\nc\""
        );
    }
}
