//! OpenMetrics text (what prometheus-client encodes) to the Prometheus text
//! format 0.0.4 (what `promtool check metrics` and scrapers that do not ask
//! for OpenMetrics read).
//!
//! The two differ where it matters here in three ways: an OpenMetrics counter
//! family is named without its `_total` suffix, which only its samples carry;
//! `# UNIT` lines; and the closing `# EOF`.

use std::fmt::Write as _;

/// The Prometheus 0.0.4 rendering of the OpenMetrics text `om`.
pub fn openmetrics_to_prometheus(om: &str) -> String {
    let mut out = String::with_capacity(om.len());
    // A family's HELP comes before its TYPE, which says whether the name
    // needs its `_total`.
    let mut pending_help: Option<&str> = None;
    for line in om.lines() {
        if let Some(help) = line.strip_prefix("# HELP ") {
            flush_help(&mut out, pending_help.take());
            pending_help = Some(help);
        } else if let Some(ty) = line.strip_prefix("# TYPE ") {
            let (name, kind) = ty.rsplit_once(' ').unwrap_or((ty, "untyped"));
            let exposed = if kind == "counter" {
                format!("{name}_total")
            } else {
                name.to_string()
            };
            if let Some(help) = pending_help.take() {
                let text = help.split_once(' ').map_or("", |(_, t)| t);
                let _ = writeln!(out, "# HELP {exposed} {text}");
            }
            let _ = writeln!(out, "# TYPE {exposed} {kind}");
        } else if line.starts_with("# UNIT ") || line == "# EOF" {
            continue;
        } else {
            flush_help(&mut out, pending_help.take());
            out.push_str(line);
            out.push('\n');
        }
    }
    flush_help(&mut out, pending_help);
    out
}

fn flush_help(out: &mut String, help: Option<&str>) {
    if let Some(h) = help {
        let _ = writeln!(out, "# HELP {h}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_take_their_total_and_units_and_eof_go() {
        let om =
            "# HELP a_seconds Busy time.\n# TYPE a_seconds counter\n# UNIT a_seconds seconds\n\
                  a_seconds_total{x=\"1\"} 0.5\n# HELP g Level.\n# TYPE g gauge\ng 3\n# EOF\n";
        assert_eq!(
            openmetrics_to_prometheus(om),
            "# HELP a_seconds_total Busy time.\n# TYPE a_seconds_total counter\n\
             a_seconds_total{x=\"1\"} 0.5\n# HELP g Level.\n# TYPE g gauge\ng 3\n"
        );
    }
}
