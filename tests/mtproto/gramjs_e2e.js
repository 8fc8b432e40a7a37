// A third real client: GramJS (the `telegram` npm package, layer 198, RSA_PAD key exchange) against
// a ptslog server (tests/integration/mtproto.rs), over obfuscated abridged. Two new accounts sign up
// with the development code, resolve each other and exchange messages that arrive live through
// GramJS's own NewMessage handler. Prints `CHECK <name>` per passed check and `E2E OK gramjs`.
//
// usage: node gramjs_e2e.js HTTP_BASE MTPROTO_HOST MTPROTO_PORT PHONE_PREFIX
const { Api } = require("telegram");
const { NewMessage } = require("telegram/events");
const { PREFIX, check, client, signUp, trustServerKey, waitFor, watchdog } =
  require("./gramjs_common");

watchdog();

(async () => {
  await trustServerKey();
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
