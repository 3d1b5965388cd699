//! report.html: the whole report as one self-contained file. The verdict first, then what the
//! status does not have, then report.md's sections with every chart inline (SVG, not linked),
//! styled by an inline sheet with the system's fonts: no script, no network, nothing to fetch,
//! so it opens from a CI artifact as it is and prints to PDF without a chart split in two.

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};

use super::headline::Verdict;
use super::plot::FONTS;
use super::svg::esc;
use crate::resource::BenchmarkRunStatus;

/// The page's style: readable tables, charts scaled to the page, print without splitting one.
fn style() -> String {
    format!(
        "body{{font-family:{FONTS};max-width:980px;margin:1.5em auto;padding:0 1em;color:#222;\
         line-height:1.45}}\
         .verdict{{padding:.8em 1em;border-radius:6px;font-size:1.25em;margin:0 0 1em}}\
         .verdict.pass{{background:#e3f4ec;border-left:8px solid #009E73}}\
         .verdict.fail{{background:#fbe7dc;border-left:8px solid #D55E00}}\
         .verdict.none{{background:#eee;border-left:8px solid #777}}\
         .missing{{background:#fafafa;border:1px dashed #aaa;padding:.4em 1em}}\
         table{{border-collapse:collapse;margin:.8em 0;font-size:.9em;display:block;\
         overflow-x:auto;max-width:100%}}\
         th,td{{border:1px solid #ccc;padding:.25em .5em;text-align:left}}\
         th{{background:#f3f3f3}}\
         figure{{margin:1em 0;break-inside:avoid;page-break-inside:avoid}}\
         figure svg{{max-width:100%;height:auto}}\
         pre{{background:#f6f6f6;padding:.6em;overflow-x:auto}}\
         @media print{{body{{max-width:none;margin:0}}table{{display:table;font-size:.7em}}\
         td{{overflow-wrap:anywhere}}figure,tr,.verdict{{break-inside:avoid;\
         page-break-inside:avoid}}h2{{break-after:avoid;page-break-after:avoid}}}}"
    )
}

/// What the status lacks, each in a sentence: a page about a run that measured nothing, or
/// without a search, says so instead of showing empty charts.
pub fn missing(status: &BenchmarkRunStatus) -> Vec<String> {
    let mut out = Vec::new();
    if status.cells.is_empty() {
        out.push("No cells: the run measured nothing (no results, no charts).".to_owned());
    } else if status.cells.iter().all(|c| c.results.is_empty()) {
        out.push("No results: no cell recorded a measurement.".to_owned());
    }
    if !status.cells.iter().any(|c| c.capacity.is_some()) {
        out.push("No capacity search (spec.capacity): no hockey stick.".to_owned());
    }
    if status.sizing.is_none() {
        out.push("No sizing search (spec.sizing): no sizing map.".to_owned());
    }
    if status.variants.is_empty() {
        out.push("No variants compared (spec.variants): no forest plot.".to_owned());
    }
    out
}

/// The page: `markdown` (report.md's text) rendered, with each image whose file is one of
/// `charts` (name, SVG) replaced by the SVG itself.
pub fn render(
    status: &BenchmarkRunStatus,
    verdict: &Verdict,
    markdown: &str,
    charts: &[(String, String)],
) -> String {
    let mut o = format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>Benchmark report: {}</title><style>{}</style></head><body>\n\
         <p class=\"verdict {}\" id=\"verdict\" data-exit=\"{}\"><strong>{}</strong> — {}</p>\n",
        esc(verdict.word),
        style(),
        verdict.class(),
        verdict.code,
        esc(verdict.word),
        esc(&format!("{} (exit {})", verdict.why, verdict.code))
    );
    let gaps = missing(status);
    if !gaps.is_empty() {
        o.push_str("<div class=\"missing\" id=\"missing\"><p>Not in this status:</p><ul>");
        for g in gaps {
            o.push_str(&format!("<li>{}</li>", esc(&g)));
        }
        o.push_str("</ul></div>\n");
    }
    o.push_str(&body(markdown, charts));
    o.push_str("</body></html>\n");
    o
}

/// report.md as HTML, its images inlined. Raw HTML in the Markdown is escaped, never passed
/// through: cell and endpoint names come from the spec.
fn body(markdown: &str, charts: &[(String, String)]) -> String {
    let mut opts = Options::empty();
    opts.insert(Options::ENABLE_TABLES);
    opts.insert(Options::ENABLE_STRIKETHROUGH);
    let mut events = Vec::new();
    let mut in_image: Option<String> = None;
    for e in Parser::new_ext(markdown, opts) {
        match e {
            Event::Start(Tag::Image { dest_url, .. }) => in_image = Some(dest_url.to_string()),
            Event::End(TagEnd::Image) => {
                let name = in_image.take().unwrap_or_default();
                let figure = match charts.iter().find(|(n, _)| *n == name) {
                    Some((_, svg)) => {
                        format!("<figure data-chart=\"{}\">{svg}</figure>", esc(&name))
                    }
                    None => format!("<p class=\"missing\">chart {} not written</p>", esc(&name)),
                };
                events.push(Event::Html(figure.into()));
            }
            // The image's alt text: dropped, the SVG has its own title.
            _ if in_image.is_some() => {}
            Event::Html(h) | Event::InlineHtml(h) => events.push(Event::Text(h)),
            other => events.push(other),
        }
    }
    let mut out = String::new();
    pulldown_cmark::html::push_html(&mut out, events.into_iter());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_html_in_names_is_escaped_and_images_are_inlined() {
        let md = "# R\n\n| cell |\n|---|\n| <script>alert(1)</script> & \"x\" ü |\n\n![c](c.svg)\n";
        let charts = vec![("c.svg".to_owned(), "<svg id=\"c\"></svg>".to_owned())];
        let v = Verdict {
            word: "failed",
            why: "a <b>".into(),
            code: 3,
        };
        let page = render(&BenchmarkRunStatus::default(), &v, md, &charts);
        assert!(!page.contains("<script>"), "{page}");
        assert!(page.contains("&lt;script&gt;") && page.contains("ü"));
        assert!(page.contains("<figure data-chart=\"c.svg\"><svg id=\"c\"></svg></figure>"));
        assert!(page.contains("a &lt;b&gt; (exit 3)") && page.contains("data-exit=\"3\""));
        assert!(page.contains("No cells"));
        assert!(!page.contains("http://") || !page.contains("src=\"http"));
    }
}
