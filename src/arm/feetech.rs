//! The Feetech SCS/STS serial-bus protocol (STS3215), sans IO.
//!
//! Only bytes in and bytes out: [`encode`] and the instruction builders turn
//! a request into the exact bytes for the wire, and [`FrameDecoder`] turns
//! whatever arrived on the wire (possibly with garbage, split across reads,
//! with broken checksums) back into frames. Nothing here opens a port or
//! looks at a clock; the bus adapter in [`super::bus`] does.
//!
//! Wire format (Feetech protocol manual, `../shared/reference/hardware.md`):
//! `FF FF ID LEN X P1..Pn CHK` with `LEN = n + 2` and
//! `CHK = !(ID + LEN + X + sum(P))`. In an instruction `X` is the
//! instruction code, in a status reply it is the servo's error byte. The
//! same framing in both directions lets the simulated bus reuse the decoder.

use std::fmt;

/// The two header bytes that start every frame.
pub const HEADER: [u8; 2] = [0xFF, 0xFF];
/// Every servo executes a packet sent to this ID; none replies (except to sync read).
pub const BROADCAST_ID: u8 = 0xFE;
/// The largest LEN byte a frame may carry. IDs go up to 0xFD, so the longest
/// sensible packet (sync write of a few bytes to every servo) stays below
/// this; a larger LEN means we locked onto garbage.
pub const MAX_LEN: u8 = 250;
/// Model number an STS3215 reports at address 3 (hardware.md).
pub const STS3215_MODEL: u16 = 777;
/// Position steps per full turn of an STS3215.
pub const STEPS_PER_TURN: u32 = 4096;

/// Instruction codes (Feetech protocol manual).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Instruction {
    Ping = 0x01,
    Read = 0x02,
    Write = 0x03,
    RegWrite = 0x04,
    Action = 0x05,
    Reset = 0x06,
    SyncRead = 0x82,
    SyncWrite = 0x83,
}

impl Instruction {
    /// The instruction with this code, if any.
    pub fn from_code(code: u8) -> Option<Instruction> {
        Some(match code {
            0x01 => Instruction::Ping,
            0x02 => Instruction::Read,
            0x03 => Instruction::Write,
            0x04 => Instruction::RegWrite,
            0x05 => Instruction::Action,
            0x06 => Instruction::Reset,
            0x82 => Instruction::SyncRead,
            0x83 => Instruction::SyncWrite,
            _ => return None,
        })
    }
}

/// A register of the STS3215 control table: address and width in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Register {
    pub name: &'static str,
    pub address: u8,
    pub size: u8,
    /// Bit holding the sign of a sign-magnitude value, if the register is signed.
    pub sign_bit: Option<u8>,
}

/// The STS3215 registers the driver uses (addresses from hardware.md).
pub mod reg {
    use super::Register;

    const fn r(name: &'static str, address: u8, size: u8, sign_bit: Option<u8>) -> Register {
        Register {
            name,
            address,
            size,
            sign_bit,
        }
    }
    pub const MODEL_NUMBER: Register = r("Model_Number", 3, 2, None);
    pub const ID: Register = r("ID", 5, 1, None);
    pub const BAUD_RATE: Register = r("Baud_Rate", 6, 1, None);
    pub const RETURN_DELAY: Register = r("Return_Delay", 7, 1, None);
    pub const MIN_POSITION_LIMIT: Register = r("Min_Position_Limit", 9, 2, None);
    pub const MAX_POSITION_LIMIT: Register = r("Max_Position_Limit", 11, 2, None);
    pub const HOMING_OFFSET: Register = r("Homing_Offset", 31, 2, Some(11));
    pub const OPERATING_MODE: Register = r("Operating_Mode", 33, 1, None);
    pub const TORQUE_ENABLE: Register = r("Torque_Enable", 40, 1, None);
    pub const ACCELERATION: Register = r("Acceleration", 41, 1, None);
    pub const GOAL_POSITION: Register = r("Goal_Position", 42, 2, Some(15));
    pub const GOAL_TIME: Register = r("Goal_Time", 44, 2, None);
    pub const GOAL_SPEED: Register = r("Goal_Speed", 46, 2, Some(15));
    pub const TORQUE_LIMIT: Register = r("Torque_Limit", 48, 2, None);
    pub const LOCK: Register = r("Lock", 55, 1, None);
    pub const PRESENT_POSITION: Register = r("Present_Position", 56, 2, Some(15));
    pub const PRESENT_SPEED: Register = r("Present_Speed", 58, 2, Some(15));
    /// Load in 0.1 % of the stall torque; bit 10 is the direction (STS manual).
    pub const PRESENT_LOAD: Register = r("Present_Load", 60, 2, Some(10));
    pub const PRESENT_VOLTAGE: Register = r("Present_Voltage", 62, 1, None);
    pub const PRESENT_TEMPERATURE: Register = r("Present_Temperature", 63, 1, None);
    pub const MOVING: Register = r("Moving", 66, 1, None);
    pub const PRESENT_CURRENT: Register = r("Present_Current", 69, 2, None);
}

/// Steps per unit of the Acceleration register (STS manual: 100 steps/s²).
pub const ACCELERATION_UNIT_STEPS_PER_S2: f64 = 100.0;

/// A fault a servo reports in the error byte of its status reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServoFault {
    /// Bit 0: input voltage outside the configured range.
    Voltage,
    /// Bit 1: goal position outside the angle limits.
    Angle,
    /// Bit 2: temperature above the limit.
    Overheat,
    /// Bit 3: current above the limit.
    OverCurrent,
    /// Bit 5: load above the limit for too long.
    Overload,
    /// Any other bit (4, 6, 7), undocumented for the STS3215.
    Unknown(u8),
}

impl fmt::Display for ServoFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ServoFault::Voltage => f.write_str("input voltage out of range"),
            ServoFault::Angle => f.write_str("goal outside the angle limits"),
            ServoFault::Overheat => f.write_str("overheated"),
            ServoFault::OverCurrent => f.write_str("over-current"),
            ServoFault::Overload => f.write_str("overloaded"),
            ServoFault::Unknown(bit) => write!(f, "unknown error bit {bit}"),
        }
    }
}

/// The error byte of a status reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ErrorBits(pub u8);

impl ErrorBits {
    pub fn is_ok(self) -> bool {
        self.0 == 0
    }

    /// The faults the byte reports, lowest bit first.
    pub fn faults(self) -> Vec<ServoFault> {
        (0..8u8)
            .filter(|bit| self.0 & (1 << bit) != 0)
            .map(|bit| match bit {
                0 => ServoFault::Voltage,
                1 => ServoFault::Angle,
                2 => ServoFault::Overheat,
                3 => ServoFault::OverCurrent,
                5 => ServoFault::Overload,
                other => ServoFault::Unknown(other),
            })
            .collect()
    }

    /// The byte with these faults set.
    pub fn from_faults(faults: &[ServoFault]) -> ErrorBits {
        ErrorBits(faults.iter().fold(0u8, |acc, f| {
            acc | match f {
                ServoFault::Voltage => 1,
                ServoFault::Angle => 2,
                ServoFault::Overheat => 4,
                ServoFault::OverCurrent => 8,
                ServoFault::Overload => 32,
                ServoFault::Unknown(bit) => 1u8.checked_shl(u32::from(*bit)).unwrap_or(0),
            }
        }))
    }
}

/// A request that cannot be encoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EncodeError {
    #[error("servo ID {0} is out of range (0..=253, or 254 for broadcast)")]
    BadId(u8),
    #[error("packet would carry {0} parameter bytes; at most {max} fit", max = MAX_LEN - 2)]
    TooLong(usize),
    #[error("sync write entry for ID {id} has {got} data bytes, expected {expected}")]
    WrongDataLength { id: u8, got: usize, expected: usize },
    #[error("value {value} does not fit register {register} ({size} bytes)")]
    ValueOutOfRange {
        register: &'static str,
        value: i64,
        size: u8,
    },
}

/// The checksum of a frame body (`ID LEN X P..`): the inverted low byte of the sum.
pub fn checksum(body: &[u8]) -> u8 {
    !body.iter().fold(0u8, |acc, b| acc.wrapping_add(*b))
}

/// One frame with an ID, a code (instruction, or error byte in a reply) and parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    pub id: u8,
    pub code: u8,
    pub params: Vec<u8>,
}

impl Frame {
    /// The error bits, reading this frame as a status reply.
    pub fn error_bits(&self) -> ErrorBits {
        ErrorBits(self.code)
    }
}

/// Encodes a frame: header, ID, LEN, code, parameters, checksum.
pub fn encode(id: u8, code: u8, params: &[u8]) -> Result<Vec<u8>, EncodeError> {
    if id == 0xFF {
        return Err(EncodeError::BadId(id));
    }
    if params.len() > usize::from(MAX_LEN - 2) {
        return Err(EncodeError::TooLong(params.len()));
    }
    let len = params.len() as u8 + 2;
    let mut out = Vec::with_capacity(params.len() + 6);
    out.extend_from_slice(&HEADER);
    out.push(id);
    out.push(len);
    out.push(code);
    out.extend_from_slice(params);
    out.push(checksum(&out[2..]));
    Ok(out)
}

fn check_unicast(id: u8) -> Result<(), EncodeError> {
    if id >= BROADCAST_ID {
        Err(EncodeError::BadId(id))
    } else {
        Ok(())
    }
}

/// PING: does servo `id` answer?
pub fn ping(id: u8) -> Result<Vec<u8>, EncodeError> {
    check_unicast(id)?;
    encode(id, Instruction::Ping as u8, &[])
}

/// READ `count` bytes from `address` of servo `id`.
pub fn read(id: u8, address: u8, count: u8) -> Result<Vec<u8>, EncodeError> {
    check_unicast(id)?;
    encode(id, Instruction::Read as u8, &[address, count])
}

/// WRITE `data` at `address` of servo `id` (or every servo with [`BROADCAST_ID`]).
pub fn write(id: u8, address: u8, data: &[u8]) -> Result<Vec<u8>, EncodeError> {
    let mut params = Vec::with_capacity(data.len() + 1);
    params.push(address);
    params.extend_from_slice(data);
    encode(id, Instruction::Write as u8, &params)
}

/// SYNC READ: each listed servo replies in turn with `count` bytes from `address`.
pub fn sync_read(address: u8, count: u8, ids: &[u8]) -> Result<Vec<u8>, EncodeError> {
    for &id in ids {
        check_unicast(id)?;
    }
    let mut params = vec![address, count];
    params.extend_from_slice(ids);
    encode(BROADCAST_ID, Instruction::SyncRead as u8, &params)
}

/// SYNC WRITE: the same register block of several servos in one packet (no reply).
pub fn sync_write(
    address: u8,
    count: u8,
    entries: &[(u8, Vec<u8>)],
) -> Result<Vec<u8>, EncodeError> {
    let mut params = vec![address, count];
    for (id, data) in entries {
        check_unicast(*id)?;
        if data.len() != usize::from(count) {
            return Err(EncodeError::WrongDataLength {
                id: *id,
                got: data.len(),
                expected: usize::from(count),
            });
        }
        params.push(*id);
        params.extend_from_slice(data);
    }
    encode(BROADCAST_ID, Instruction::SyncWrite as u8, &params)
}

/// Encodes a signed value as sign-magnitude with the sign in `sign_bit`.
pub fn to_sign_magnitude(value: i32, sign_bit: u8) -> Option<u16> {
    let magnitude = value.unsigned_abs();
    let limit = 1u32 << sign_bit;
    if magnitude >= limit || sign_bit > 15 {
        return None;
    }
    let sign = if value < 0 { limit } else { 0 };
    Some((magnitude | sign) as u16)
}

/// Decodes a sign-magnitude value with the sign in `sign_bit`.
pub fn from_sign_magnitude(raw: u16, sign_bit: u8) -> i32 {
    let sign_mask = 1u32 << sign_bit.min(15);
    let raw = u32::from(raw);
    let magnitude = (raw & (sign_mask - 1)) as i32;
    if raw & sign_mask != 0 {
        -magnitude
    } else {
        magnitude
    }
}

/// The little-endian bytes of a register value, sign-magnitude where the register is signed.
pub fn encode_value(register: Register, value: i32) -> Result<Vec<u8>, EncodeError> {
    let bad = || EncodeError::ValueOutOfRange {
        register: register.name,
        value: i64::from(value),
        size: register.size,
    };
    let raw: u16 = match register.sign_bit {
        Some(bit) => to_sign_magnitude(value, bit).ok_or_else(bad)?,
        None => u16::try_from(value).map_err(|_| bad())?,
    };
    match register.size {
        1 => u8::try_from(raw).map(|b| vec![b]).map_err(|_| bad()),
        2 => Ok(raw.to_le_bytes().to_vec()),
        _ => Err(bad()),
    }
}

/// Decodes a register value from its little-endian bytes (`bytes.len()` = size).
pub fn decode_value(register: Register, bytes: &[u8]) -> Option<i32> {
    let raw = match (register.size, bytes) {
        (1, [b]) => u16::from(*b),
        (2, [lo, hi]) => u16::from_le_bytes([*lo, *hi]),
        _ => return None,
    };
    Some(match register.sign_bit {
        Some(bit) => from_sign_magnitude(raw, bit),
        None => i32::from(raw),
    })
}

/// Something on the wire that is not a valid frame.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    #[error("checksum mismatch in frame from ID {id}: got {got:#04x}, expected {expected:#04x}")]
    Checksum { id: u8, got: u8, expected: u8 },
}

/// Reassembles frames from a byte stream.
///
/// Feed it whatever a read returned; it skips bytes that cannot start a
/// frame (counting them in [`FrameDecoder::discarded`]), waits for the rest
/// of a partial frame, and after a bad checksum skips that header and
/// searches again, so one corrupted frame does not hide the next.
#[derive(Debug, Default)]
pub struct FrameDecoder {
    buf: Vec<u8>,
    discarded: usize,
}

impl FrameDecoder {
    pub fn new() -> FrameDecoder {
        FrameDecoder::default()
    }

    /// Appends received bytes.
    pub fn push(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    /// Bytes thrown away so far while searching for a header.
    pub fn discarded(&self) -> usize {
        self.discarded
    }

    /// Bytes held, waiting for the rest of a frame.
    pub fn pending(&self) -> usize {
        self.buf.len()
    }

    /// Forgets everything buffered.
    pub fn clear(&mut self) {
        self.discarded += self.buf.len();
        self.buf.clear();
    }

    fn drop_front(&mut self, n: usize) {
        let n = n.min(self.buf.len());
        self.buf.drain(..n);
    }

    /// The next complete frame, an error for a corrupted one, or `None` until more bytes arrive.
    pub fn next_frame(&mut self) -> Option<Result<Frame, DecodeError>> {
        loop {
            // Find the header; keep a trailing lone 0xFF, it may start one.
            let start = self.buf.windows(2).position(|w| w == HEADER);
            match start {
                Some(s) => {
                    self.discarded += s;
                    self.drop_front(s);
                }
                None => {
                    let keep = usize::from(self.buf.last() == Some(&0xFF));
                    let drop = self.buf.len() - keep;
                    self.discarded += drop;
                    self.drop_front(drop);
                    return None;
                }
            }
            if self.buf.len() < 4 {
                return None;
            }
            let id = self.buf[2];
            let len = self.buf[3];
            // `FF FF FF ..`: the header starts one byte later. A LEN below 2 or
            // absurdly large means this was not a header at all.
            if id == 0xFF || !(2..=MAX_LEN).contains(&len) {
                self.discarded += 1;
                self.drop_front(1);
                continue;
            }
            let total = usize::from(len) + 4;
            if self.buf.len() < total {
                return None;
            }
            let expected = checksum(&self.buf[2..total - 1]);
            let got = self.buf[total - 1];
            if got != expected {
                // Skip this header only: a real frame may begin inside the bad one.
                self.discarded += 2;
                self.drop_front(2);
                return Some(Err(DecodeError::Checksum { id, got, expected }));
            }
            let frame = Frame {
                id,
                code: self.buf[4],
                params: self.buf[5..total - 1].to_vec(),
            };
            self.drop_front(total);
            return Some(Ok(frame));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn hex(s: &str) -> Vec<u8> {
        s.split_whitespace()
            .map(|b| u8::from_str_radix(b, 16).unwrap())
            .collect()
    }

    // Golden vectors from ../shared/reference/hardware.md, byte for byte.
    #[test]
    fn golden_ping() {
        assert_eq!(ping(1).unwrap(), hex("FF FF 01 02 01 FB"));
    }

    #[test]
    fn golden_write_goal_position() {
        let data = encode_value(reg::GOAL_POSITION, 2048).unwrap();
        assert_eq!(
            write(1, reg::GOAL_POSITION.address, &data).unwrap(),
            hex("FF FF 01 05 03 2A 00 08 C4")
        );
    }

    #[test]
    fn golden_read_present_position() {
        assert_eq!(
            read(1, reg::PRESENT_POSITION.address, reg::PRESENT_POSITION.size).unwrap(),
            hex("FF FF 01 04 02 38 02 BE")
        );
    }

    #[test]
    fn golden_sync_read() {
        assert_eq!(
            sync_read(reg::PRESENT_POSITION.address, 2, &[1, 2, 3]).unwrap(),
            hex("FF FF FE 07 82 38 02 01 02 03 38")
        );
    }

    #[test]
    fn golden_sync_write() {
        let entries = vec![
            (1, encode_value(reg::GOAL_POSITION, 2048).unwrap()),
            (2, encode_value(reg::GOAL_POSITION, 1024).unwrap()),
        ];
        assert_eq!(
            sync_write(reg::GOAL_POSITION.address, 2, &entries).unwrap(),
            hex("FF FF FE 0A 83 2A 02 01 00 08 02 00 04 39")
        );
    }

    #[test]
    fn golden_vectors_decode_back_to_their_frames() {
        let mut d = FrameDecoder::new();
        d.push(&hex("FF FF FE 0A 83 2A 02 01 00 08 02 00 04 39"));
        let f = d.next_frame().unwrap().unwrap();
        assert_eq!(f.id, BROADCAST_ID);
        assert_eq!(Instruction::from_code(f.code), Some(Instruction::SyncWrite));
        assert_eq!(f.params, hex("2A 02 01 00 08 02 00 04"));
        assert!(d.next_frame().is_none());
        assert_eq!(d.discarded(), 0);
    }

    #[test]
    fn status_reply_with_position_decodes() {
        // Servo 1 reports position 2048 with no error.
        let reply = encode(1, 0, &[0x00, 0x08]).unwrap();
        assert_eq!(reply, hex("FF FF 01 04 00 00 08 F2"));
        let mut d = FrameDecoder::new();
        d.push(&reply);
        let f = d.next_frame().unwrap().unwrap();
        assert!(f.error_bits().is_ok());
        assert_eq!(decode_value(reg::PRESENT_POSITION, &f.params), Some(2048));
    }

    #[test]
    fn resyncs_after_garbage_and_split_reads() {
        let reply = encode(3, 0, &[0x10, 0x02]).unwrap();
        let mut d = FrameDecoder::new();
        d.push(&[0x12, 0xFF, 0x00, 0xFF]);
        assert!(d.next_frame().is_none());
        d.push(&reply[..3]);
        assert!(d.next_frame().is_none());
        d.push(&reply[3..]);
        let f = d.next_frame().unwrap().unwrap();
        assert_eq!((f.id, f.params.clone()), (3, vec![0x10, 0x02]));
        assert_eq!(d.discarded(), 4);
        assert_eq!(d.pending(), 0);
    }

    #[test]
    fn triple_ff_header_is_found() {
        let mut d = FrameDecoder::new();
        let mut bytes = vec![0xFF];
        bytes.extend(ping(7).unwrap());
        d.push(&bytes);
        let f = d.next_frame().unwrap().unwrap();
        assert_eq!(f.id, 7);
        assert_eq!(d.discarded(), 1);
    }

    #[test]
    fn bad_checksum_is_reported_then_next_frame_found() {
        let mut bad = encode(2, 0, &[1, 2]).unwrap();
        let last = bad.len() - 1;
        bad[last] ^= 0x55;
        let good = encode(2, 0, &[3, 4]).unwrap();
        let mut d = FrameDecoder::new();
        d.push(&bad);
        d.push(&good);
        assert!(matches!(
            d.next_frame(),
            Some(Err(DecodeError::Checksum { id: 2, .. }))
        ));
        let f = d.next_frame().unwrap().unwrap();
        assert_eq!(f.params, vec![3, 4]);
    }

    #[test]
    fn absurd_length_is_skipped() {
        let mut d = FrameDecoder::new();
        d.push(&[0xFF, 0xFF, 0x01, 0xFF]);
        d.push(&ping(1).unwrap());
        assert_eq!(d.next_frame().unwrap().unwrap().id, 1);
    }

    #[test]
    fn error_bits_map_to_faults() {
        let bits = ErrorBits(0b0010_1101);
        assert_eq!(
            bits.faults(),
            vec![
                ServoFault::Voltage,
                ServoFault::Overheat,
                ServoFault::OverCurrent,
                ServoFault::Overload
            ]
        );
        assert_eq!(ErrorBits::from_faults(&bits.faults()), bits);
        assert_eq!(ErrorBits(0x10).faults(), vec![ServoFault::Unknown(4)]);
    }

    #[test]
    fn sign_magnitude_examples() {
        assert_eq!(to_sign_magnitude(-5, 15), Some(0x8005));
        assert_eq!(from_sign_magnitude(0x8005, 15), -5);
        assert_eq!(to_sign_magnitude(-2047, 11), Some(0x0FFF));
        assert_eq!(to_sign_magnitude(2048, 11), None);
        assert_eq!(from_sign_magnitude(0x0400 | 300, 10), -300);
        assert_eq!(
            encode_value(reg::HOMING_OFFSET, -100).unwrap(),
            vec![100, 0x08]
        );
    }

    #[test]
    fn bad_requests_are_refused() {
        assert_eq!(ping(BROADCAST_ID), Err(EncodeError::BadId(BROADCAST_ID)));
        assert!(matches!(
            sync_write(42, 2, &[(1, vec![0])]),
            Err(EncodeError::WrongDataLength { id: 1, .. })
        ));
        assert!(encode_value(reg::TORQUE_ENABLE, 256).is_err());
        assert!(encode_value(reg::GOAL_POSITION, 40000).is_err());
        assert!(matches!(
            encode(1, 3, &[0; 249]),
            Err(EncodeError::TooLong(249))
        ));
    }

    proptest! {
        #[test]
        fn any_frame_round_trips_through_noise(
            id in 0u8..=0xFE,
            code in any::<u8>(),
            params in proptest::collection::vec(any::<u8>(), 0..40),
            noise in proptest::collection::vec(0u8..0xFF, 0..10),
            split in 0usize..60,
        ) {
            let bytes = encode(id, code, &params).unwrap();
            let mut stream = noise.clone();
            stream.extend(&bytes);
            let split = split.min(stream.len());
            let mut d = FrameDecoder::new();
            d.push(&stream[..split]);
            let mut got = d.next_frame();
            if got.is_none() {
                d.push(&stream[split..]);
                got = d.next_frame();
            } else {
                d.push(&stream[split..]);
            }
            let frame = got.expect("frame").expect("valid");
            prop_assert_eq!(frame, Frame { id, code, params });
        }

        #[test]
        fn sign_magnitude_round_trips(v in -32767i32..=32767) {
            let raw = to_sign_magnitude(v, 15).unwrap();
            prop_assert_eq!(from_sign_magnitude(raw, 15), v);
        }
    }
}
