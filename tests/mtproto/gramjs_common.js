// What the GramJS scripts share: a client pointed at the test server (address, port and RSA key
// from the command line and `GET /v1/mtproto/public-key`) over obfuscated abridged, sign-up with
// the development code, `check` and `waitFor`. Scripts take HTTP_BASE MTPROTO_HOST MTPROTO_PORT
// PHONE_PREFIX ... as arguments.
const { TelegramClient, Api } = require("telegram");
const { StringSession } = require("telegram/sessions");
const { ConnectionTCPObfuscated } = require("telegram/network");
const { PromisedNetSockets } = require("telegram/extensions");
const RSA = require("telegram/crypto/RSA");
const bigInt = require("big-integer");

const [HTTP, HOST, PORT, PREFIX] = process.argv.slice(2);
const CODE = "12345";

function check(name, ok, detail) {
  if (!ok) throw new Error(`${name} failed ${detail === undefined ? "" : JSON.stringify(detail)}`);
  console.log(`CHECK ${name}`);
}

// GramJS always dials port 80 (443 with WSS): point its connection at the test server.
class Local extends ConnectionTCPObfuscated {
  constructor(opts) {
    super({ ...opts, ip: HOST, port: Number(PORT) });
  }
}

async function trustServerKey() {
  const info = await (await fetch(`${HTTP}/v1/mtproto/public-key`)).json();
  // Fingerprints are signed 64-bit: take the hex form (a JSON number loses precision in JS).
  RSA._serverKeys.set(BigInt.asIntN(64, BigInt("0x" + info.fingerprint_hex)).toString(), {
    n: bigInt(info.modulus_hex, 16), e: parseInt(info.exponent_hex, 16),
  });
}

async function client() {
  const session = new StringSession("");
  session.setDC(2, HOST, Number(PORT));
  const c = new TelegramClient(session, 1, "0".repeat(32), {
    connection: Local,
    networkSocket: PromisedNetSockets,
    connectionRetries: 1,
  });
  c.setLogLevel("error");
  await c.connect();
  if (!c.connected) throw new Error("could not connect");
  return c;
}

async function signUp(c, phone, firstName) {
  const sent = await c.invoke(new Api.auth.SendCode({
    phoneNumber: phone, apiId: 1, apiHash: "x", settings: new Api.CodeSettings({}),
  }));
  let r = await c.invoke(new Api.auth.SignIn({
    phoneNumber: phone, phoneCodeHash: sent.phoneCodeHash, phoneCode: CODE,
  }));
  if (r.className === "auth.AuthorizationSignUpRequired") {
    r = await c.invoke(new Api.auth.SignUp({
      phoneNumber: phone, phoneCodeHash: sent.phoneCodeHash, firstName, lastName: "",
    }));
  }
  return r.user;
}

async function waitFor(pred, what) {
  for (let i = 0; i < 300; i++) {
    if (pred()) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`timed out waiting for ${what}`);
}

// GramJS gives up on a failed connection without settling the pending calls, and node would then
// exit 0 on an empty event loop: keep it alive and fail loudly instead.
function watchdog() {
  return setTimeout(() => {
    console.log("FAILED: no result within 180 s");
    process.exit(1);
  }, 180000);
}

module.exports = { HTTP, PREFIX, check, client, signUp, trustServerKey, waitFor, watchdog };
