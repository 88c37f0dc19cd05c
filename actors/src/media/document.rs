//! A document's text for the model's `[Document]` block: plain text,
//! markdown, CSV and JSON as they are (UTF-8, else refused), PDF through
//! lopdf, page by page. Bounded: at most `max_chars` characters come out;
//! a PDF's streams each decompress to at most `STREAM_MAX` bytes (a
//! zip-bomb PDF fails instead of filling memory), and reading stops at
//! `max_chars` or `PAGES_MAX` pages. Blocking: run on the blocking pool.
//!
//! Trust: a document's text is the sender's words, outside data like the
//! rest of their message.

use std::path::Path;

use super::store::MediaRef;

/// The most any one PDF stream may decompress to.
pub const STREAM_MAX: usize = 16 << 20;
/// The most pages read from one PDF.
const PAGES_MAX: usize = 500;

/// What reading a document gave: its text and whether it was cut.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DocText {
    pub text: String,
    pub truncated: bool,
}

/// Whether the type is one ferroclaw reads as a document.
pub fn readable(content_type: &str) -> bool {
    let t = content_type.to_ascii_lowercase();
    t.starts_with("text/")
        || t == "application/pdf"
        || t == "application/json"
        || t.ends_with("+json")
        || t == "application/csv"
        || t == "application/x-ndjson"
}

/// The text of the stored document `media`, at most `max_chars`.
/// Why a document's text could not be read (the note the model reads).
#[derive(Debug, thiserror::Error)]
pub enum DocError {
    #[error("{0} is not a document ferroclaw reads")]
    NotADocument(String),
    #[error("cannot read the file: {0}")]
    Read(#[from] std::io::Error),
    #[error("the file is not UTF-8 text")]
    NotUtf8,
    #[error("the PDF is encrypted")]
    Encrypted,
    #[error("the PDF has no text (a scan?)")]
    NoText,
    /// lopdf's error, as `pdf_error` words it.
    #[error("{0}")]
    Pdf(String),
    #[error("the reader failed: {0}")]
    Reader(String),
}

pub fn extract(media: &MediaRef, max_chars: usize) -> Result<DocText, DocError> {
    match media.content_type.as_str() {
        "application/pdf" => pdf(&media.path, max_chars),
        t if readable(t) => text(&media.path, max_chars),
        t => Err(DocError::NotADocument(t.to_string())),
    }
}

fn text(path: &Path, max_chars: usize) -> Result<DocText, DocError> {
    use std::io::Read;
    // At most 4 bytes a character: nothing past what could be kept is read.
    let limit = (max_chars as u64).saturating_mul(4).saturating_add(4);
    let mut bytes = Vec::new();
    std::fs::File::open(path).and_then(|f| f.take(limit).read_to_end(&mut bytes))?;
    let read = match std::str::from_utf8(&bytes) {
        Ok(s) => s,
        // Cut inside a character by the read limit: keep the whole ones.
        Err(e) if e.error_len().is_none() => {
            std::str::from_utf8(&bytes[..e.valid_up_to()]).map_err(|_| DocError::NotUtf8)?
        }
        Err(_) => return Err(DocError::NotUtf8),
    };
    let full = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0) > bytes.len() as u64;
    Ok(cap(read, max_chars, full))
}

fn cap(s: &str, max_chars: usize, more: bool) -> DocText {
    let clean = crate::inbound::sanitize_text(s);
    let count = clean.chars().count();
    DocText {
        truncated: more || count > max_chars,
        text: clean.chars().take(max_chars).collect(),
    }
}

fn pdf(path: &Path, max_chars: usize) -> Result<DocText, DocError> {
    let bytes = std::fs::read(path)?;
    let options = lopdf::LoadOptions {
        max_decompressed_size: Some(STREAM_MAX),
        ..Default::default()
    };
    let doc = lopdf::Document::load_mem_with_options(&bytes, options)
        .map_err(|e| DocError::Pdf(pdf_error(e)))?;
    if doc.is_encrypted() {
        return Err(DocError::Encrypted);
    }
    let pages: Vec<u32> = doc.get_pages().keys().copied().collect();
    let mut out = String::new();
    let mut truncated = pages.len() > PAGES_MAX;
    let mut failed = None;
    for page in pages.into_iter().take(PAGES_MAX) {
        if out.chars().count() > max_chars {
            truncated = true;
            break;
        }
        match doc.extract_text_with_limit(&[page], STREAM_MAX) {
            Ok(t) => out.push_str(&t),
            // A bomb in one page: refused whole, not read around.
            Err(e @ lopdf::Error::Decompress(_)) => return Err(DocError::Pdf(pdf_error(e))),
            Err(e) => failed = Some(pdf_error(e)),
        }
    }
    if out.trim().is_empty() {
        return Err(failed.map_or(DocError::NoText, DocError::Pdf));
    }
    let mut d = cap(&out, max_chars, truncated);
    d.text = d.text.trim().to_string();
    Ok(d)
}

/// Chosen pages of a PDF (`wanted`: 1-based page numbers; None: every
/// page), each under a `--- page N ---` line, at most `max_chars`.
#[derive(Debug, Clone, PartialEq)]
pub struct PdfPages {
    pub text: String,
    pub truncated: bool,
    /// Pages in the file.
    pub total: usize,
    /// Pages read (in order).
    pub read: Vec<u32>,
}

/// Why pages could not be read.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PagesError {
    #[error("pages {0:?}: expected numbers and ranges like \"1-5\" or \"1,3,5-7\"")]
    BadSpec(String),
    #[error("no such pages: the PDF has {0} page(s)")]
    NoSuchPages(usize),
    #[error("{0}")]
    Unreadable(String),
}

pub fn pdf_pages(
    path: &Path,
    wanted: Option<&[u32]>,
    max_chars: usize,
) -> Result<PdfPages, PagesError> {
    let unreadable = PagesError::Unreadable;
    let bytes =
        std::fs::read(path).map_err(|e| unreadable(format!("cannot read the file: {e}")))?;
    let options = lopdf::LoadOptions {
        max_decompressed_size: Some(STREAM_MAX),
        ..Default::default()
    };
    let doc = lopdf::Document::load_mem_with_options(&bytes, options)
        .map_err(|e| unreadable(pdf_error(e)))?;
    if doc.is_encrypted() {
        return Err(unreadable(
            "the PDF is encrypted (ferroclaw does not open encrypted PDFs)".into(),
        ));
    }
    let all: Vec<u32> = doc.get_pages().keys().copied().collect();
    let chosen: Vec<u32> = match wanted {
        Some(w) => all.iter().copied().filter(|p| w.contains(p)).collect(),
        None => all.clone(),
    };
    if chosen.is_empty() {
        return Err(PagesError::NoSuchPages(all.len()));
    }
    let mut out = PdfPages {
        text: String::new(),
        truncated: chosen.len() > PAGES_MAX,
        total: all.len(),
        read: Vec::new(),
    };
    for page in chosen.into_iter().take(PAGES_MAX) {
        if out.text.chars().count() > max_chars {
            out.truncated = true;
            break;
        }
        let text = match doc.extract_text_with_limit(&[page], STREAM_MAX) {
            Ok(t) => t,
            Err(e @ lopdf::Error::Decompress(_)) => return Err(unreadable(pdf_error(e))),
            Err(e) => format!("[page not read: {}]", pdf_error(e)),
        };
        out.text.push_str(&format!(
            "--- page {page} ---\n{}\n",
            crate::inbound::sanitize_text(text.trim())
        ));
        out.read.push(page);
    }
    if out.text.chars().count() > max_chars {
        out.truncated = true;
        out.text = out.text.chars().take(max_chars).collect();
    }
    Ok(out)
}

/// `"1-5"`, `"1,3,5-7"`: the page numbers (1-based), or why not.
pub fn page_list(spec: &str) -> Result<Vec<u32>, PagesError> {
    let mut out = Vec::new();
    for part in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let bad = || PagesError::BadSpec(spec.to_string());
        let (a, b) = match part.split_once('-') {
            Some((a, b)) => (
                a.trim().parse::<u32>().map_err(|_| bad())?,
                b.trim().parse::<u32>().map_err(|_| bad())?,
            ),
            None => {
                let n = part.parse::<u32>().map_err(|_| bad())?;
                (n, n)
            }
        };
        if a == 0 || b < a || b - a > 10_000 {
            return Err(bad());
        }
        out.extend(a..=b);
    }
    if out.is_empty() {
        return Err(PagesError::BadSpec(spec.to_string()));
    }
    Ok(out)
}

fn pdf_error(e: lopdf::Error) -> String {
    match e {
        lopdf::Error::Decompress(d) => format!(
            "the PDF expands past {} MB in one stream (a compression bomb?): {d}",
            STREAM_MAX >> 20
        ),
        other => format!("the PDF cannot be read: {other}"),
    }
}

/// OpenClaw-style block for one document.
pub fn block(name: &str, content_type: &str, d: &DocText) -> String {
    let cut = match d.truncated {
        true => "\n[document truncated]",
        false => "",
    };
    format!(
        "[Document]\nName: {name} ({content_type})\nContent:\n{}{cut}",
        d.text
    )
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A one-page PDF whose page says `lines` (Helvetica), with its
    /// content stream compressed when `compress`.
    pub fn make_pdf(lines: &[&str]) -> Vec<u8> {
        use lopdf::content::{Content, Operation};
        use lopdf::{dictionary, Object, Stream};
        let mut doc = lopdf::Document::with_version("1.5");
        let pages_id = doc.new_object_id();
        let font_id = doc.add_object(dictionary! {
            "Type" => "Font", "Subtype" => "Type1", "BaseFont" => "Helvetica",
        });
        let resources_id = doc.add_object(dictionary! {
            "Font" => dictionary! { "F1" => font_id },
        });
        let mut ops = vec![Operation::new("BT", vec![])];
        ops.push(Operation::new("Tf", vec!["F1".into(), 12.into()]));
        for (i, line) in lines.iter().enumerate() {
            ops.push(Operation::new(
                "Td",
                vec![72.into(), (720 - 20 * i as i64).into()],
            ));
            ops.push(Operation::new("Tj", vec![Object::string_literal(*line)]));
        }
        ops.push(Operation::new("ET", vec![]));
        let content = Content { operations: ops };
        let content_id = doc.add_object(Stream::new(dictionary! {}, content.encode().unwrap()));
        let page_id = doc.add_object(dictionary! {
            "Type" => "Page", "Parent" => pages_id, "Contents" => content_id,
        });
        doc.objects.insert(
            pages_id,
            Object::Dictionary(dictionary! {
                "Type" => "Pages", "Kids" => vec![page_id.into()], "Count" => 1,
                "Resources" => resources_id,
                "MediaBox" => vec![0.into(), 0.into(), 595.into(), 842.into()],
            }),
        );
        let catalog_id = doc.add_object(dictionary! { "Type" => "Catalog", "Pages" => pages_id });
        doc.trailer.set("Root", catalog_id);
        doc.compress();
        let mut out = Vec::new();
        doc.save_to(&mut out).unwrap();
        out
    }

    /// A PDF whose page content is `size` bytes of zeros, deflated (a
    /// 1 GB stream is about a megabyte on the wire).
    pub fn bomb_pdf(size: usize) -> Vec<u8> {
        use std::io::Write;
        let mut z = flate2_free_deflate(size);
        let mut out = Vec::new();
        write!(
            out,
            "%PDF-1.4\n1 0 obj\n<< /Type /Catalog /Pages 2 0 R >>\nendobj\n"
        )
        .unwrap();
        write!(
            out,
            "2 0 obj\n<< /Type /Pages /Kids [3 0 R] /Count 1 >>\nendobj\n"
        )
        .unwrap();
        write!(
            out,
            "3 0 obj\n<< /Type /Page /Parent 2 0 R /Contents 4 0 R >>\nendobj\n"
        )
        .unwrap();
        write!(
            out,
            "4 0 obj\n<< /Length {} /Filter /FlateDecode >>\nstream\n",
            z.len()
        )
        .unwrap();
        out.append(&mut z);
        write!(
            out,
            "\nendstream\nendobj\ntrailer\n<< /Root 1 0 R /Size 5 >>\n%%EOF\n"
        )
        .unwrap();
        out
    }

    /// Zeros deflated with stored-free fixed-Huffman blocks, built by hand
    /// so the test needs no compressor: zlib header, then runs of
    /// length-258 back-references to one literal zero.
    fn flate2_free_deflate(size: usize) -> Vec<u8> {
        let mut bits = Bits::default();
        // One block, final, fixed Huffman (BFINAL=1, BTYPE=01).
        bits.put(1, 1);
        bits.put(1, 2);
        // Literal 0: fixed code 00110000 (8 bits, 0..143 -> 0x30 + lit).
        bits.huff(0x30, 8);
        let mut left = size.saturating_sub(1);
        while left >= 258 {
            // Length 258: code 285 (fixed: 11000101, 8 bits), no extra bits.
            bits.huff(0xC5, 8);
            // Distance 1: code 0 (5 bits), no extra.
            bits.huff(0, 5);
            left -= 258;
        }
        for _ in 0..left {
            bits.huff(0x30, 8);
        }
        // End of block: 256 -> 0000000 (7 bits).
        bits.huff(0, 7);
        let mut out = vec![0x78, 0x01];
        out.extend(bits.finish());
        // Adler-32 of `size` zeros: a = 1, b = size mod 65521.
        let b = (size % 65521) as u32;
        out.extend(((b << 16) | 1).to_be_bytes());
        out
    }

    #[derive(Default)]
    struct Bits {
        out: Vec<u8>,
        acc: u32,
        n: u32,
    }

    impl Bits {
        fn put(&mut self, v: u32, n: u32) {
            for i in 0..n {
                self.acc |= ((v >> i) & 1) << self.n;
                self.n += 1;
                if self.n == 8 {
                    self.out.push(self.acc as u8);
                    self.acc = 0;
                    self.n = 0;
                }
            }
        }
        /// A Huffman code: most significant bit first.
        fn huff(&mut self, code: u32, n: u32) {
            for i in (0..n).rev() {
                self.put((code >> i) & 1, 1);
            }
        }
        fn finish(mut self) -> Vec<u8> {
            if self.n > 0 {
                self.out.push(self.acc as u8);
            }
            self.out
        }
    }

    fn stored(dir: &Path, bytes: &[u8], ct: &str) -> MediaRef {
        super::super::store::put(dir, bytes, Some(ct), None, 0).unwrap()
    }

    #[test]
    fn a_pdf_made_here_reads_back_as_its_text() {
        let dir = tempfile::tempdir().unwrap();
        let m = stored(
            dir.path(),
            &make_pdf(&["Quarterly report", "Revenue grew 12 percent"]),
            "application/pdf",
        );
        let d = extract(&m, 10_000).unwrap();
        assert!(d.text.contains("Quarterly report"), "{d:?}");
        assert!(d.text.contains("Revenue grew 12 percent"), "{d:?}");
        assert!(!d.truncated);
        let short = extract(&m, 9).unwrap();
        assert_eq!(short.text.chars().count(), 9);
        assert!(short.truncated);
    }

    #[test]
    fn a_zip_bomb_pdf_is_refused_without_inflating_it() {
        let dir = tempfile::tempdir().unwrap();
        // 1 GB of zeros in about 4 MB of PDF.
        let bomb = bomb_pdf(1 << 30);
        assert!(bomb.len() < 8 << 20, "{}", bomb.len());
        let m = stored(dir.path(), &bomb, "application/pdf");
        let e = extract(&m, 10_000).unwrap_err();
        assert!(e.to_string().contains("compression bomb"), "{e}");
    }

    #[test]
    fn text_csv_and_json_are_read_as_they_are_and_other_bytes_refused() {
        let dir = tempfile::tempdir().unwrap();
        let csv = stored(dir.path(), b"name,qty\napples,3\n", "text/csv");
        assert_eq!(extract(&csv, 100).unwrap().text, "name,qty\napples,3\n");
        let json = stored(dir.path(), br#"{"a": [1, 2]}"#, "application/json");
        assert_eq!(extract(&json, 100).unwrap().text, r#"{"a": [1, 2]}"#);
        let long = stored(dir.path(), "é".repeat(5000).as_bytes(), "text/plain");
        let d = extract(&long, 10).unwrap();
        assert_eq!((d.text.chars().count(), d.truncated), (10, true));
        let bin = stored(dir.path(), &[0xff, 0xfe, 0x00, 0x81], "text/plain");
        assert!(matches!(extract(&bin, 100), Err(DocError::NotUtf8)));
        let not_pdf = stored(dir.path(), b"%PDF-1.4 garbage", "application/pdf");
        assert!(extract(&not_pdf, 100)
            .unwrap_err()
            .to_string()
            .contains("cannot be read"));
    }
}
