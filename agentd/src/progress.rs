//! Lines printed beside a progress bar, and a spinner for long steps.

use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};

/// Prints `line` above `bar`, or on stderr when the bar is hidden (no
/// terminal, `--quiet`): a log still gets every line.
pub fn println(bar: &ProgressBar, line: impl AsRef<str>) {
    if bar.is_hidden() {
        eprintln!("{}", line.as_ref());
    } else {
        bar.println(line);
    }
}

/// A spinner on stderr showing the elapsed time and `message`.
pub fn spinner(message: &str) -> ProgressBar {
    let bar = ProgressBar::new_spinner();
    if let Ok(style) = ProgressStyle::with_template("{spinner} {elapsed:>4} {msg}") {
        bar.set_style(style);
    }
    bar.set_message(message.to_string());
    bar.enable_steady_tick(Duration::from_millis(250));
    bar
}
