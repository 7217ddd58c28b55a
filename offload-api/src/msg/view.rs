//! The zero-copy view skeleton shared by every message type, in the style of smoltcp's
//! `wire` types: `new_unchecked`, `new_checked`, `check_len`, field getters and setters at
//! fixed offsets from the common header.

/// Declares a view `$name<T: AsRef<[u8]>>` over the bytes of one message type, starting at
/// the common header. Fields are `getter / setter : Type = offset;`, with `Type` one of the
/// [`super::wire::Field`] types. Every field must end within the type's fixed length (the
/// unit tests of each message exercise all getters on a buffer of exactly that length).
macro_rules! msg_view {
    (
        $(#[$meta:meta])*
        pub struct $name:ident : $ty:expr;
        fields {
            $( $(#[$fmeta:meta])* $get:ident / $set:ident : $fty:ty = $off:expr; )*
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub struct $name<T: AsRef<[u8]>> {
            buffer: T,
        }

        impl<T: AsRef<[u8]>> $name<T> {
            /// Length of the header this version defines (common header included).
            pub const FIXED_LEN: usize = $ty.fixed_len();
            /// The message type this view reads and writes.
            pub const MSG_TYPE: $crate::msg::MsgType = $ty;

            /// Wraps `buffer` (starting at the common header) without any check. Getters and
            /// setters panic when the buffer is shorter than [`Self::FIXED_LEN`]; use
            /// [`Self::new_checked`] on bytes you did not size yourself.
            pub const fn new_unchecked(buffer: T) -> Self {
                Self { buffer }
            }

            /// Wraps `buffer` after [`Self::check_len`]. Never panics; afterwards no getter
            /// panics either.
            pub fn new_checked(buffer: T) -> Result<Self, $crate::msg::MsgError> {
                let view = Self::new_unchecked(buffer);
                view.check_len()?;
                Ok(view)
            }

            /// Checks the common header: version [`VERSION`](crate::msg::VERSION), this type,
            /// a header length at least [`Self::FIXED_LEN`] and within the buffer, and any
            /// type-specific length rule. Never panics.
            pub fn check_len(&self) -> Result<(), $crate::msg::MsgError> {
                $crate::msg::check_message(self.buffer.as_ref(), $ty)
            }

            /// The wrapped buffer.
            pub fn into_inner(self) -> T {
                self.buffer
            }

            /// The version byte.
            pub fn version(&self) -> u8 {
                self.buffer.as_ref()[0]
            }

            /// The message-type byte.
            pub fn msg_type(&self) -> u8 {
                self.buffer.as_ref()[1]
            }

            /// The header length: bytes from the common header to the payload, fixed fields
            /// and any extensions this version does not know.
            pub fn header_len(&self) -> usize {
                let b = self.buffer.as_ref();
                usize::from(u16::from_be_bytes([b[2], b[3]]))
            }

            /// Everything after the header (empty when the header length exceeds the buffer,
            /// which [`Self::check_len`] refuses).
            pub fn payload(&self) -> &[u8] {
                let b = self.buffer.as_ref();
                b.get(self.header_len()..).unwrap_or(&[])
            }

            $(
                $(#[$fmeta])*
                pub fn $get(&self) -> $fty {
                    <$fty as $crate::msg::wire::Field>::read(&self.buffer.as_ref()[$off..])
                }
            )*
        }

        impl<T: AsRef<[u8]> + AsMut<[u8]>> $name<T> {
            /// Writes the common header: version [`VERSION`](crate::msg::VERSION), this
            /// type and header length [`Self::FIXED_LEN`].
            pub fn set_common(&mut self) {
                let b = self.buffer.as_mut();
                b[0] = $crate::msg::VERSION;
                b[1] = $ty.code();
                b[2..4].copy_from_slice(&(Self::FIXED_LEN as u16).to_be_bytes());
            }

            /// Sets the header length (for a sender appending extension fields after the
            /// fixed ones).
            pub fn set_header_len(&mut self, len: u16) {
                self.buffer.as_mut()[2..4].copy_from_slice(&len.to_be_bytes());
            }

            /// Zeroes the fixed header after the common header (reserved bytes included).
            pub fn clear_fields(&mut self) {
                let fixed = Self::FIXED_LEN;
                self.buffer.as_mut()[$crate::msg::COMMON_HEADER_LEN..fixed].fill(0);
            }

            /// Everything after the header, writable.
            pub fn payload_mut(&mut self) -> &mut [u8] {
                let start = self.header_len();
                self.buffer.as_mut().get_mut(start..).unwrap_or(&mut [])
            }

            $(
                #[doc = concat!("Sets the field read by [`Self::", stringify!($get), "`].")]
                pub fn $set(&mut self, value: $fty) {
                    $crate::msg::wire::Field::write(&value, &mut self.buffer.as_mut()[$off..]);
                }
            )*
        }
    };
}
