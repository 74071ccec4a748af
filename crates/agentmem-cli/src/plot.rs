//! An SVG chart of a replay: context tokens per turn, the budget, the
//! compaction trigger, and each compaction marked.

use std::fmt::Write;

use agentmem::pipeline::tiers::Action;

use crate::measure::TurnLine;

const WIDTH: f64 = 960.0;
const HEIGHT: f64 = 420.0;
const MARGIN_LEFT: f64 = 80.0;
const MARGIN_RIGHT: f64 = 30.0;
const MARGIN_TOP: f64 = 50.0;
const MARGIN_BOTTOM: f64 = 50.0;

/// The chart as an SVG document.
pub fn context_svg(source: &str, model: &str, lines: &[TurnLine]) -> String {
    let turns = lines.len().max(1) as f64;
    let top = lines
        .iter()
        .map(|l| l.context_tokens.max(l.budget))
        .max()
        .unwrap_or(1)
        .max(1) as f64
        * 1.08;
    let x = |turn: f64| {
        MARGIN_LEFT + (turn - 1.0) / (turns - 1.0).max(1.0) * (WIDTH - MARGIN_LEFT - MARGIN_RIGHT)
    };
    let y =
        |tokens: f64| HEIGHT - MARGIN_BOTTOM - tokens / top * (HEIGHT - MARGIN_TOP - MARGIN_BOTTOM);
    let mut svg = String::new();
    let _ = write!(
        svg,
        r##"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" font-family="sans-serif" font-size="12">
<rect width="100%" height="100%" fill="white"/>
<text x="{MARGIN_LEFT}" y="24" font-size="15" font-weight="bold">Context per turn — {} ({})</text>
"##,
        escape(source),
        escape(model)
    );
    for i in 0..=4 {
        let tokens = top / 1.08 * f64::from(i) / 4.0;
        let _ = writeln!(
            svg,
            r##"<line x1="{MARGIN_LEFT}" x2="{}" y1="{y:.1}" y2="{y:.1}" stroke="#eee"/><text x="{}" y="{:.1}" text-anchor="end">{}</text>"##,
            WIDTH - MARGIN_RIGHT,
            MARGIN_LEFT - 8.0,
            y(tokens) + 4.0,
            thousands(tokens.round() as u64),
            y = y(tokens)
        );
    }
    let step = (lines.len() / 10).max(1).next_power_of_two().max(5);
    for turn in (step..=lines.len()).step_by(step) {
        let _ = writeln!(
            svg,
            r##"<text x="{:.1}" y="{}" text-anchor="middle">{turn}</text>"##,
            x(turn as f64),
            HEIGHT - MARGIN_BOTTOM + 16.0
        );
    }
    for (n, line) in lines.iter().enumerate() {
        if line
            .actions
            .iter()
            .any(|a| matches!(a, Action::Compacted { .. }))
        {
            let cx = x(n as f64 + 1.0);
            let _ = writeln!(
                svg,
                r##"<line x1="{cx:.1}" x2="{cx:.1}" y1="{MARGIN_TOP}" y2="{}" stroke="#1f77b4" stroke-dasharray="3,3"/>"##,
                HEIGHT - MARGIN_BOTTOM
            );
        }
    }
    let series = |value: &dyn Fn(&TurnLine) -> u64| -> String {
        lines
            .iter()
            .enumerate()
            .map(|(n, l)| format!("{:.1},{:.1}", x(n as f64 + 1.0), y(value(l) as f64)))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let _ = writeln!(
        svg,
        r##"<polyline fill="none" stroke="#d62728" stroke-width="1.5" points="{}"/>"##,
        series(&|l| l.budget)
    );
    let _ = writeln!(
        svg,
        r##"<polyline fill="none" stroke="#ff7f0e" stroke-width="1.5" stroke-dasharray="6,4" points="{}"/>"##,
        series(&|l| l.trigger)
    );
    let _ = writeln!(
        svg,
        r##"<polyline fill="none" stroke="#2ca02c" stroke-width="2" points="{}"/>"##,
        series(&|l| l.context_tokens)
    );
    let _ = write!(
        svg,
        r##"<text x="{}" y="{}" text-anchor="end">turn</text>
<g transform="translate({},{})">
<rect x="0" y="-12" width="12" height="3" fill="#2ca02c"/><text x="18" y="-8">context tokens</text>
<rect x="130" y="-12" width="12" height="3" fill="#d62728"/><text x="148" y="-8">input budget</text>
<rect x="250" y="-12" width="12" height="3" fill="#ff7f0e"/><text x="268" y="-8">compaction trigger</text>
<rect x="400" y="-14" width="2" height="8" fill="#1f77b4"/><text x="408" y="-8">compaction</text>
</g>
<text x="{}" y="{}" text-anchor="end">{} turns</text>
</svg>
"##,
        MARGIN_LEFT - 8.0,
        HEIGHT - MARGIN_BOTTOM + 16.0,
        MARGIN_LEFT + 60.0,
        HEIGHT - 10.0,
        WIDTH - MARGIN_RIGHT,
        HEIGHT - 16.0,
        lines.len()
    );
    svg
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

fn thousands(n: u64) -> String {
    match n {
        0..1_000 => n.to_string(),
        1_000..1_000_000 => format!("{:.0}k", n as f64 / 1e3),
        _ => format!("{:.1}M", n as f64 / 1e6),
    }
}
