//! The Dynamixel protocol 2.0 (WidowX and similar arms), sans IO.
//!
//! `FF FF FD 00 ID LEN_L LEN_H INSTR P.. CRC_L CRC_H` with LEN = bytes after
//! LEN (instruction, parameters after stuffing, CRC) and a CRC-16 (poly
//! 0x8005, init 0, not reflected) over everything before it. Byte stuffing
//! inserts `FD` after any `FF FF FD` inside the instruction and parameters,
//! so the header never appears in a body (hardware.md). Status packets use
//! instruction 0x55 followed by the error byte. Only the codec is here; a
//! bus adapter behind the arm interface is future work.

/// Packet header (the 4th byte is reserved, always 0).
pub const HEADER: [u8; 4] = [0xFF, 0xFF, 0xFD, 0x00];
pub const BROADCAST_ID: u8 = 0xFE;
/// Instruction byte of a status (reply) packet.
pub const STATUS: u8 = 0x55;

/// X-series control table addresses used by an arm (hardware.md).
pub mod reg {
    pub const TORQUE_ENABLE: u16 = 64;
    pub const PROFILE_ACCELERATION: u16 = 108;
    pub const PROFILE_VELOCITY: u16 = 112;
    pub const GOAL_POSITION: u16 = 116;
    pub const PRESENT_POSITION: u16 = 132;
}

/// Instruction codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Instruction {
    Ping = 0x01,
    Read = 0x02,
    Write = 0x03,
    SyncRead = 0x82,
    SyncWrite = 0x83,
}

/// CRC-16 of the Dynamixel protocol 2.0.
pub fn crc16(data: &[u8]) -> u16 {
    let mut crc: u16 = 0;
    for &b in data {
        crc ^= u16::from(b) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 != 0 {
                (crc << 1) ^ 0x8005
            } else {
                crc << 1
            };
        }
    }
    crc
}

/// Inserts `FD` after every `FF FF FD`.
pub fn stuff(body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(body.len() + 4);
    for &b in body {
        out.push(b);
        let n = out.len();
        if n >= 3 && out[n - 3..] == [0xFF, 0xFF, 0xFD] {
            out.push(0xFD);
        }
    }
    out
}

/// Removes the `FD` inserted after every `FF FF FD`.
pub fn unstuff(body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(body.len());
    let mut i = 0;
    while i < body.len() {
        out.push(body[i]);
        let n = out.len();
        if n >= 3 && out[n - 3..] == [0xFF, 0xFF, 0xFD] && body.get(i + 1) == Some(&0xFD) {
            i += 1;
        }
        i += 1;
    }
    out
}

/// A request that cannot be encoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EncodeError {
    #[error("packet body of {0} bytes does not fit the 16-bit length")]
    TooLong(usize),
    #[error("servo ID {0} is out of range (0..=252, or 254 for broadcast)")]
    BadId(u8),
}

/// Encodes a packet: `code` is the instruction (or [`STATUS`]).
pub fn encode(id: u8, code: u8, params: &[u8]) -> Result<Vec<u8>, EncodeError> {
    if id > 0xFC && id != BROADCAST_ID {
        return Err(EncodeError::BadId(id));
    }
    let mut body = vec![code];
    body.extend_from_slice(params);
    let body = stuff(&body);
    let len = u16::try_from(body.len() + 2).map_err(|_| EncodeError::TooLong(body.len()))?;
    let mut out = Vec::with_capacity(body.len() + 9);
    out.extend_from_slice(&HEADER);
    out.push(id);
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(&body);
    let crc = crc16(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    Ok(out)
}

pub fn ping(id: u8) -> Result<Vec<u8>, EncodeError> {
    encode(id, Instruction::Ping as u8, &[])
}

pub fn read(id: u8, address: u16, count: u16) -> Result<Vec<u8>, EncodeError> {
    let mut p = address.to_le_bytes().to_vec();
    p.extend(count.to_le_bytes());
    encode(id, Instruction::Read as u8, &p)
}

pub fn write(id: u8, address: u16, data: &[u8]) -> Result<Vec<u8>, EncodeError> {
    let mut p = address.to_le_bytes().to_vec();
    p.extend_from_slice(data);
    encode(id, Instruction::Write as u8, &p)
}

/// SYNC WRITE of `count` bytes at `address` to several servos.
pub fn sync_write(
    address: u16,
    count: u16,
    entries: &[(u8, Vec<u8>)],
) -> Result<Vec<u8>, EncodeError> {
    let mut p = address.to_le_bytes().to_vec();
    p.extend(count.to_le_bytes());
    for (id, data) in entries {
        p.push(*id);
        p.extend_from_slice(data);
    }
    encode(BROADCAST_ID, Instruction::SyncWrite as u8, &p)
}

/// A decoded packet (parameters unstuffed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Packet {
    pub id: u8,
    pub code: u8,
    pub params: Vec<u8>,
}

impl Packet {
    /// For a status packet: the error byte and the data after it.
    pub fn status(&self) -> Option<(u8, &[u8])> {
        if self.code != STATUS {
            return None;
        }
        self.params.split_first().map(|(e, rest)| (*e, rest))
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    #[error("CRC mismatch in packet from ID {id}: got {got:#06x}, expected {expected:#06x}")]
    Crc { id: u8, got: u16, expected: u16 },
}

/// Largest LEN accepted before concluding we locked onto noise.
pub const MAX_LEN: usize = 1024;

/// Reassembles packets from a byte stream, resynchronising on the header.
#[derive(Debug, Default)]
pub struct PacketDecoder {
    buf: Vec<u8>,
}

impl PacketDecoder {
    pub fn new() -> PacketDecoder {
        PacketDecoder::default()
    }

    pub fn push(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    pub fn next_packet(&mut self) -> Option<Result<Packet, DecodeError>> {
        loop {
            match self.buf.windows(4).position(|w| w == HEADER) {
                Some(s) => {
                    self.buf.drain(..s);
                }
                None => {
                    // Keep a tail that may be the start of a header.
                    let keep = self.buf.len().min(3);
                    let drop = self.buf.len() - keep;
                    self.buf.drain(..drop);
                    return None;
                }
            }
            if self.buf.len() < 7 {
                return None;
            }
            let id = self.buf[4];
            let len = usize::from(u16::from_le_bytes([self.buf[5], self.buf[6]]));
            if !(3..=MAX_LEN).contains(&len) {
                self.buf.drain(..1);
                continue;
            }
            let total = 7 + len;
            if self.buf.len() < total {
                return None;
            }
            let expected = crc16(&self.buf[..total - 2]);
            let got = u16::from_le_bytes([self.buf[total - 2], self.buf[total - 1]]);
            if got != expected {
                self.buf.drain(..1);
                return Some(Err(DecodeError::Crc { id, got, expected }));
            }
            let body = unstuff(&self.buf[7..total - 2]);
            self.buf.drain(..total);
            let (code, params) = match body.split_first() {
                Some((c, p)) => (*c, p.to_vec()),
                None => continue,
            };
            return Some(Ok(Packet { id, code, params }));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn golden_ping() {
        // hardware.md: ping ID 1.
        assert_eq!(
            ping(1).unwrap(),
            vec![0xFF, 0xFF, 0xFD, 0x00, 0x01, 0x03, 0x00, 0x01, 0x19, 0x4E]
        );
    }

    #[test]
    fn header_inside_parameters_is_stuffed_and_restored() {
        let data = [0x10, 0xFF, 0xFF, 0xFD, 0x20];
        let pkt = write(3, reg::GOAL_POSITION, &data).unwrap();
        // The body carries FF FF FD FD, and LEN counts the stuffed byte.
        assert!(pkt.windows(4).any(|w| w == [0xFF, 0xFF, 0xFD, 0xFD]));
        let mut d = PacketDecoder::new();
        d.push(&pkt);
        let p = d.next_packet().unwrap().unwrap();
        assert_eq!(p.params[2..], data);
        assert_eq!(
            u16::from_le_bytes([p.params[0], p.params[1]]),
            reg::GOAL_POSITION
        );
    }

    #[test]
    fn status_reply_decodes_error_and_data() {
        let reply = encode(1, STATUS, &[0x00, 0x00, 0x08, 0x00, 0x00]).unwrap();
        let mut d = PacketDecoder::new();
        d.push(&[0x42, 0xFF]);
        d.push(&reply);
        let p = d.next_packet().unwrap().unwrap();
        let (err, data) = p.status().unwrap();
        assert_eq!(err, 0);
        assert_eq!(
            i32::from_le_bytes([data[0], data[1], data[2], data[3]]),
            2048
        );
    }

    #[test]
    fn corrupted_crc_is_reported() {
        let mut pkt = read(2, reg::PRESENT_POSITION, 4).unwrap();
        let n = pkt.len();
        pkt[n - 1] ^= 0x01;
        let mut d = PacketDecoder::new();
        d.push(&pkt);
        assert!(matches!(
            d.next_packet(),
            Some(Err(DecodeError::Crc { id: 2, .. }))
        ));
    }

    proptest! {
        #[test]
        fn packets_round_trip(id in 0u8..=0xFC, code in any::<u8>(),
                              params in proptest::collection::vec(any::<u8>(), 0..60),
                              noise in proptest::collection::vec(0u8..0xFD, 0..8)) {
            let pkt = encode(id, code, &params).unwrap();
            let mut d = PacketDecoder::new();
            d.push(&noise);
            d.push(&pkt);
            let p = d.next_packet().unwrap().unwrap();
            prop_assert_eq!(p, Packet { id, code, params });
        }

        #[test]
        fn stuffing_round_trips(body in proptest::collection::vec(prop_oneof![Just(0xFFu8), Just(0xFD), any::<u8>()], 0..40)) {
            let s = stuff(&body);
            prop_assert!(!s.windows(4).any(|w| w == HEADER));
            prop_assert_eq!(unstuff(&s), body);
        }
    }
}
