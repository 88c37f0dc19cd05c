// Preloaded (`node --require`) into MCP servers the tests start over HTTP:
// every server the process opens listens on 127.0.0.1 only, whatever host
// the server itself asks for (tests never bind beyond loopback).
const net = require("net");
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  if (args[0] !== null && typeof args[0] === "object") {
    args[0] = { ...args[0], host: "127.0.0.1" };
    return listen.apply(this, args);
  }
  const port = Number(args[0]);
  const done = args.find((a) => typeof a === "function");
  return listen.call(this, port, "127.0.0.1", done);
};
