// Loaded into node.exe under Wine by the Windows tests only (never the product). Wine 8.0 refuses
// setsockopt(SO_KEEPALIVE) on a socket that is not connected yet, which undici (fetch) asks for
// before it connects: every fetch to 127.0.0.1 failed with "connect UNKNOWN". Real Windows allows it.
require('node:net').Socket.prototype.setKeepAlive = function () {
  return this;
};
