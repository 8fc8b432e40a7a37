// A third real client: GramJS (the `telegram` npm package, layer 198, RSA_PAD key exchange) against
// a ptslog server (tests/integration/mtproto.rs), over obfuscated abridged. Two new accounts sign up
// with the development code, resolve each other and exchange messages that arrive live through
// GramJS's own NewMessage handler. Prints `CHECK <name>` per passed check and `E2E OK gramjs`.
//
// usage: node gramjs_e2e.js HTTP_BASE MTPROTO_HOST MTPROTO_PORT PHONE_PREFIX
const { TelegramClient, Api } = require("telegram");
const { StringSession } = require("telegram/sessions");
const { NewMessage } = require("telegram/events");
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
const watchdog = setTimeout(() => {
  console.log("FAILED: no result within 180 s");
  process.exit(1);
}, 180000);

(async () => {
  const info = await (await fetch(`${HTTP}/v1/mtproto/public-key`)).json();
  // Fingerprints are signed 64-bit: take the hex form (a JSON number loses precision in JS).
  RSA._serverKeys.set(BigInt.asIntN(64, BigInt("0x" + info.fingerprint_hex)).toString(), {
    n: bigInt(info.modulus_hex, 16), e: parseInt(info.exponent_hex, 16),
  });
  const ePhone = `+${PREFIX}1`, fPhone = `+${PREFIX}2`;
  const e = await client(), f = await client();
  const eve = await signUp(e, ePhone, "Eve");
  const frank = await signUp(f, fPhone, "Frank");
  check("sign_up", eve.firstName === "Eve" && frank.firstName === "Frank");
  const me = await e.getMe();
  check("get_me", me.id.toString() === eve.id.toString());

  const frankForEve = (await e.invoke(new Api.contacts.ResolvePhone({ phone: fPhone }))).users[0];
  const eveForFrank = (await f.invoke(new Api.contacts.ResolvePhone({ phone: ePhone }))).users[0];
  check("resolve_phone", frankForEve.id.toString() === frank.id.toString()
    && eveForFrank.id.toString() === eve.id.toString());

  const fGot = [], eGot = [];
  f.addEventHandler((ev) => { fGot.push(ev.message); }, new NewMessage({ incoming: true }));
  e.addEventHandler((ev) => { eGot.push(ev.message); }, new NewMessage({ incoming: true }));

  await e.sendMessage(frankForEve, { message: "hello frank" });
  await waitFor(() => fGot.length > 0, "Frank to get the message live");
  check("live_receive", fGot[0].message === "hello frank"
    && fGot[0].senderId.toString() === eve.id.toString());
  await f.sendMessage(eveForFrank, { message: "hi eve" });
  await waitFor(() => eGot.length > 0, "Eve to get the reply live");
  check("live_reply", eGot[0].message === "hi eve");

  const history = (await f.getMessages(eveForFrank, { limit: 10 })).map((m) => m.message);
  check("history", JSON.stringify(history) === JSON.stringify(["hi eve", "hello frank"]), history);
  const dialogs = await e.getDialogs({});
  check("dialogs", dialogs.length === 1 && dialogs[0].id.toString() === frank.id.toString(),
    dialogs.map((d) => d.id.toString()));

  await e.disconnect();
  await f.disconnect();
  console.log("E2E OK gramjs");
  process.exit(0);
})().catch((err) => {
  console.log("FAILED", err && (err.stack || err.message || err));
  process.exit(1);
});
