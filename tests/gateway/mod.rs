mod admin_http;
mod devices;
mod events;
mod handshake;
mod interop;
mod malformed;
mod methods;
mod process;
