//! OpenMetrics text (what prometheus-client encodes) to the Prometheus text
//! format 0.0.4 (what `promtool check metrics` and scrapers that do not ask
//! for OpenMetrics read).
//!
//! The two differ where it matters here in three ways: an OpenMetrics counter
//! family is named without its `_total` suffix, which only its samples carry;
//! `# UNIT` lines; and the closing `# EOF`.
//!
//! prometheus-client keeps a family's series in a hash map, so it encodes
//! them in an order that changes between runs; [`sort_series`] puts them in
//! label-set order so that every scrape lists them alike.

use std::borrow::Cow;
use std::fmt::Write as _;

/// The OpenMetrics text `om` with each family's series sorted by label set.
///
/// A series is the run of consecutive samples with the same labels but `le`
/// (a histogram's `_sum`, `_count` and `_bucket` lines stay together, in
/// their order); the families and their comment lines keep their places.
pub fn sort_series(om: &str) -> String {
    let mut out = String::with_capacity(om.len());
    // The current family's series: (label set without `le`, its lines).
    let mut series: Vec<(&str, Vec<&str>)> = Vec::new();
    let flush = |out: &mut String, series: &mut Vec<(&str, Vec<&str>)>| {
        // Stable: a family's samples with equal label sets (none here)
        // would keep their order.
        series.sort_by(|a, b| a.0.cmp(b.0));
        for line in series.drain(..).flat_map(|(_, lines)| lines) {
            out.push_str(line);
            out.push('\n');
        }
    };
    for line in om.lines() {
        if line.starts_with('#') {
            flush(&mut out, &mut series);
            out.push_str(line);
            out.push('\n');
            continue;
        }
        let key = series_key(line);
        match series.last_mut() {
            Some((last, lines)) if same_series(last, key) => lines.push(line),
            _ => series.push((key, vec![line])),
        }
    }
    flush(&mut out, &mut series);
    out
}

/// A sample line's labels (between its braces; empty without), which for
/// a histogram bucket still hold its `le`; see [`same_series`].
fn series_key(sample: &str) -> &str {
    let Some(open) = sample.find(['{', ' ']) else {
        return "";
    };
    let bytes = sample.as_bytes();
    if bytes[open] == b' ' {
        return "";
    }
    let mut quoted = false;
    let mut i = open + 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' if quoted => i += 1,
            b'"' => quoted = !quoted,
            b'}' if !quoted => return &sample[open + 1..i],
            _ => {}
        }
        i += 1;
    }
    &sample[open + 1..]
}

/// Whether two label sets differ at most in an `le` label, which
/// prometheus-client puts first in a histogram's bucket samples.
fn same_series(a: &str, b: &str) -> bool {
    without_le(a) == without_le(b)
}

fn without_le(labels: &str) -> Cow<'_, str> {
    let at = if labels.starts_with("le=\"") {
        0
    } else if let Some(comma) = labels.find(",le=\"") {
        comma + 1
    } else {
        return Cow::Borrowed(labels);
    };
    // A bucket bound is a number: its value holds no escaped quote.
    let value_end = labels[at + 4..]
        .find('"')
        .map_or(labels.len(), |q| at + 4 + q + 1);
    let (head, tail) = (&labels[..at], &labels[value_end..]);
    let joined = match (head.strip_suffix(','), tail.strip_prefix(',')) {
        (Some(h), Some(t)) => format!("{h},{t}"),
        (Some(h), None) => format!("{h}{tail}"),
        (None, Some(t)) => format!("{head}{t}"),
        (None, None) => format!("{head}{tail}"),
    };
    Cow::Owned(joined)
}

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
    fn series_sort_by_labels_and_histograms_keep_their_lines_together() {
        let om = "# TYPE c counter\nc_total{r=\"b\"} 2\nc_total{r=\"a\"} 1\n\
                  # TYPE h histogram\nh_sum{x=\"2\"} 1\nh_count{x=\"2\"} 1\n\
                  h_bucket{le=\"1.0\",x=\"2\"} 1\nh_bucket{le=\"+Inf\",x=\"2\"} 1\n\
                  h_sum{x=\"1\"} 0\nh_count{x=\"1\"} 0\n\
                  h_bucket{le=\"1.0\",x=\"1\"} 0\nh_bucket{le=\"+Inf\",x=\"1\"} 0\n\
                  # TYPE g gauge\ng 3\n# EOF\n";
        assert_eq!(
            sort_series(om),
            "# TYPE c counter\nc_total{r=\"a\"} 1\nc_total{r=\"b\"} 2\n\
             # TYPE h histogram\nh_sum{x=\"1\"} 0\nh_count{x=\"1\"} 0\n\
             h_bucket{le=\"1.0\",x=\"1\"} 0\nh_bucket{le=\"+Inf\",x=\"1\"} 0\n\
             h_sum{x=\"2\"} 1\nh_count{x=\"2\"} 1\n\
             h_bucket{le=\"1.0\",x=\"2\"} 1\nh_bucket{le=\"+Inf\",x=\"2\"} 1\n\
             # TYPE g gauge\ng 3\n# EOF\n"
        );
    }

    #[test]
    fn a_label_value_with_a_brace_or_quote_ends_no_label_set() {
        assert_eq!(series_key("a{x=\"}\\\"\"} 1"), "x=\"}\\\"\"");
        assert_eq!(series_key("a 1"), "");
        assert!(same_series("x=\"1\",le=\"2.0\"", "x=\"1\""));
        assert!(same_series("le=\"2.0\"", ""));
        assert!(same_series(
            "le=\"+Inf\",x=\"1\",y=\"2\"",
            "x=\"1\",y=\"2\""
        ));
        assert!(same_series("x=\"1\",le=\"1.0\",y=\"2\"", "x=\"1\",y=\"2\""));
        assert!(!same_series("handle=\"2.0\"", ""));
        assert!(!same_series("x=\"1\"", "x=\"2\""));
    }

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
