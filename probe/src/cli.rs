//! The command-line conventions both binaries share (`jr2-probe` and `jr2-preflight`): durations as people write
//! them, and clap's usage errors as the one `error:` line the contract asks for.

use std::time::Duration;

/// `120s`, `2m`, `500ms`, `1h`, or plain seconds; more than 0, at most a day.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let (number, unit) = match text.find(|c: char| !(c.is_ascii_digit() || c == '.')) {
        Some(at) => text.split_at(at),
        None => (text, "s"),
    };
    let value: f64 = number
        .parse()
        .map_err(|_| format!("\"{text}\" is not a duration (e.g. 120s, 2m, 500ms)"))?;
    let secs = match unit {
        "ms" => value / 1000.0,
        "s" => value,
        "m" => value * 60.0,
        "h" => value * 3600.0,
        _ => {
            return Err(format!(
                "\"{text}\" has an unknown unit (use ms, s, m or h)"
            ));
        }
    };
    if !(secs > 0.0 && secs <= 86_400.0) {
        return Err(format!("\"{text}\" must be more than 0 and at most a day"));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// [`parse_duration`], or zero (`0`, `0s`, `0ms`...) for a setting whose `--help` says `0s: none` (`--waiting-note`):
/// before, `--waiting-note 0s` was refused while the help offered it (issue 27, item 11).
pub fn parse_duration_or_zero(text: &str) -> Result<Duration, String> {
    let number = text
        .trim()
        .trim_end_matches(|c: char| c.is_ascii_alphabetic());
    if !number.is_empty() && number.parse::<f64>().is_ok_and(|v| v == 0.0) {
        // The unit must still be one of ours: `0d` is as wrong as `5d`.
        return parse_duration(&text.trim().replacen(number, "1", 1)).map(|_| Duration::ZERO);
    }
    parse_duration(text)
}

/// Clap's rendered error as one line, without its `error: ` prefix, its usage block and its "for more
/// information" tail, escaped for a terminal.
pub fn usage_line(e: &clap::Error) -> String {
    let text = e.render().to_string();
    let line = text
        .lines()
        .take_while(|l| !l.starts_with("Usage:") && !l.starts_with("For more information"))
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    crate::sanitize::escape(line.strip_prefix("error: ").unwrap_or(&line))
}

/// A clap error as both binaries end on it: help and version as clap prints them (exit 0; help shown because an
/// argument or subcommand is missing, exit 2), any other as one `error:` line naming the help to read (`see <program>
/// [<subcommand>] --help`, exit 2). The one place the two binaries' usage errors are worded.
pub fn usage_error(
    e: &clap::Error,
    program: &str,
    subcommand: Option<&str>,
) -> crate::contract::Exit {
    use crate::contract::Exit;
    use clap::error::ErrorKind;
    match e.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
            let _ = e.print();
            Exit::Ok
        }
        ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            let _ = e.print();
            Exit::Usage
        }
        _ => {
            let line = usage_line(e);
            let help = match subcommand {
                Some(sub) => format!("{program} {sub}"),
                None => program.to_owned(),
            };
            crate::say!("error: {line} (see {help} --help)");
            Exit::Usage
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("120s"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("1h"), Ok(Duration::from_secs(3600)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("7"), Ok(Duration::from_secs(7)));
        assert!(parse_duration("0s").is_err());
        assert!(parse_duration("soon").is_err());
        assert!(parse_duration("5d").is_err());
        assert!(parse_duration("25h").is_err());
    }

    #[test]
    fn zero_where_zero_means_none() {
        for zero in ["0", "0s", "0ms", "0.0m", " 0s "] {
            assert_eq!(parse_duration_or_zero(zero), Ok(Duration::ZERO), "{zero}");
        }
        assert_eq!(parse_duration_or_zero("30s"), Ok(Duration::from_secs(30)));
        assert!(parse_duration_or_zero("0d").is_err());
        assert!(parse_duration_or_zero("-1s").is_err());
        assert!(parse_duration_or_zero("soon").is_err());
    }
}
