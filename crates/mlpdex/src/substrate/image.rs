//! The frame every serialized image of mlpdex shares (FST, SuRF, compact B-tree): an 8-byte
//! magic, a little-endian `u32` format version at byte 8, the structure's own fields, and the
//! XXH3-64 (seed 0) of every byte before it in the last 8 bytes.

use super::hash::hash_bytes;
use crate::Error;

/// Checks `buf`'s frame: at least `min` bytes (the header and checksum), `magic`, `version`
/// (newer or older ones are [`Error::Version`]), and the checksum. Returns the length of the
/// body, the image without its checksum.
pub fn check_frame(buf: &[u8], magic: [u8; 8], version: u32, min: usize) -> Result<usize, Error> {
    let bad = |what, offset| Error::Format { what, offset };
    if buf.len() < min.max(20) {
        return Err(bad("truncated header", buf.len()));
    }
    if buf[..8] != magic {
        return Err(bad("bad magic", 0));
    }
    let found = u32::from_le_bytes([buf[8], buf[9], buf[10], buf[11]]);
    if found != version {
        return Err(Error::Version {
            found,
            supported: version,
        });
    }
    let body = buf.len() - 8;
    let mut sum = [0u8; 8];
    sum.copy_from_slice(&buf[body..]);
    if hash_bytes(&buf[..body], 0) != u64::from_le_bytes(sum) {
        return Err(bad("checksum mismatch", body));
    }
    Ok(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_are_checked_in_order() {
        let mut img = b"MAGICMAG".to_vec();
        img.extend_from_slice(&3u32.to_le_bytes());
        img.extend_from_slice(&[7; 12]);
        let sum = hash_bytes(&img, 0);
        img.extend_from_slice(&sum.to_le_bytes());
        assert_eq!(check_frame(&img, *b"MAGICMAG", 3, 20), Ok(img.len() - 8));
        assert!(matches!(
            check_frame(&img[..19], *b"MAGICMAG", 3, 20),
            Err(Error::Format {
                what: "truncated header",
                ..
            })
        ));
        assert!(matches!(
            check_frame(&img, *b"MAGICMAX", 3, 20),
            Err(Error::Format {
                what: "bad magic",
                ..
            })
        ));
        assert_eq!(
            check_frame(&img, *b"MAGICMAG", 2, 20),
            Err(Error::Version {
                found: 3,
                supported: 2
            })
        );
        img[14] ^= 1;
        assert!(matches!(
            check_frame(&img, *b"MAGICMAG", 3, 20),
            Err(Error::Format {
                what: "checksum mismatch",
                ..
            })
        ));
    }
}
