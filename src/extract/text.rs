//! Plain text, and the byte-to-string decoding every text format shares.

use super::{BrokenReason, Extracted, Section};

/// Share of control characters above which "text" is really binary.
const MAX_CONTROL_SHARE: f64 = 0.05;

/// Decodes bytes to a string: UTF-8 (with or without BOM), UTF-16 with a BOM,
/// or the legacy encoding chardetng guesses. Binary data is refused, not
/// decoded into mojibake.
pub fn decode(bytes: &[u8]) -> Result<String, BrokenReason> {
    if let Some(rest) = bytes.strip_prefix(b"\xEF\xBB\xBF") {
        return check_text(String::from_utf8_lossy(rest).into_owned());
    }
    if let Some((enc, _)) = encoding_rs::Encoding::for_bom(bytes) {
        let (s, had_errors) = enc.decode_with_bom_removal(bytes);
        if had_errors {
            return Err(BrokenReason::Undecodable);
        }
        return check_text(s.into_owned());
    }
    if bytes.contains(&0) {
        return Err(BrokenReason::Binary);
    }
    match std::str::from_utf8(bytes) {
        Ok(s) => check_text(s.to_string()),
        Err(_) => {
            let mut detector =
                chardetng::EncodingDetector::new(chardetng::Iso2022JpDetection::Deny);
            detector.feed(bytes, true);
            let enc = detector.guess(None, chardetng::Utf8Detection::Allow);
            let (s, _, had_errors) = enc.decode(bytes);
            if had_errors {
                return Err(BrokenReason::Undecodable);
            }
            check_text(s.into_owned())
        }
    }
}

fn check_text(s: String) -> Result<String, BrokenReason> {
    let total = s.chars().count().max(1);
    let control = s
        .chars()
        .filter(|c| c.is_control() && !matches!(c, '\n' | '\r' | '\t' | '\x0c'))
        .count();
    if control as f64 / total as f64 > MAX_CONTROL_SHARE {
        return Err(BrokenReason::Binary);
    }
    Ok(s)
}

/// A plain-text document is one section. Its first line is the title when it
/// looks like one (short, not a sentence).
pub fn extract(s: &str) -> Extracted {
    let first = s
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("");
    let looks_like_title = !first.is_empty()
        && first.chars().count() <= 80
        && !first.ends_with(['.', ',', ';', ':'])
        && s.lines().count() > 1;
    Extracted {
        title: if looks_like_title {
            first.to_string()
        } else {
            String::new()
        },
        sections: vec![Section {
            heading_path: Vec::new(),
            text: s.to_string(),
            page: None,
        }],
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latin1_text_is_decoded_not_refused() {
        let bytes = b"Caf\xe9 au lait, cr\xe8me br\xfbl\xe9e et na\xefvet\xe9 fran\xe7aise.";
        let s = decode(bytes).unwrap();
        assert!(s.contains("Café"), "{s}");
        assert!(s.contains("crème"), "{s}");
    }

    #[test]
    fn utf16_with_bom_is_decoded() {
        let mut bytes = vec![0xFF, 0xFE];
        for u in "hello world".encode_utf16() {
            bytes.extend_from_slice(&u.to_le_bytes());
        }
        assert_eq!(decode(&bytes).unwrap(), "hello world");
    }

    #[test]
    fn binary_posing_as_text_is_refused() {
        let bytes: Vec<u8> = (0..4096u32).map(|i| (i * 7919 % 251) as u8).collect();
        assert_eq!(decode(&bytes), Err(BrokenReason::Binary));
    }

    #[test]
    fn control_heavy_bytes_without_nul_are_binary() {
        let bytes: Vec<u8> = (0..2000u32)
            .map(|i| if i % 3 == 0 { 0x01 } else { b'a' })
            .collect();
        assert_eq!(decode(&bytes), Err(BrokenReason::Binary));
    }
}
