// GramJS sends a photo to a ptslog server (tests/integration/mtproto/gramjs_media.rs): sendFile of
// a JPEG (inputMediaUploadedPhoto, cut into sizes by the server); the recipient gets it live and
// downloads the largest size, which is a whole JPEG of the announced size and the same bytes the
// sender downloads. Prints `CHECK <name>` per passed check and `GRAMJS MEDIA OK`.
//
// usage: node gramjs_media.js HTTP_BASE MTPROTO_HOST MTPROTO_PORT PHONE_PREFIX JPEG_PATH
const { Api } = require("telegram");
const { NewMessage } = require("telegram/events");
const { PREFIX, check, client, signUp, trustServerKey, waitFor, watchdog } =
  require("./gramjs_common");

const JPEG = process.argv[6];
watchdog();

function largest(photo) {
  const sized = photo.sizes.filter((s) => s instanceof Api.PhotoSize);
  return sized.reduce((a, b) => (b.size > a.size ? b : a));
}

(async () => {
  await trustServerKey();
  const ePhone = `+${PREFIX}1`, fPhone = `+${PREFIX}2`;
  const e = await client(), f = await client();
  await signUp(e, ePhone, "Eve");
  await signUp(f, fPhone, "Frank");
  const frankForEve = (await e.invoke(new Api.contacts.ResolvePhone({ phone: fPhone }))).users[0];
  await f.invoke(new Api.contacts.ResolvePhone({ phone: ePhone }));
  const fGot = [];
  f.addEventHandler((ev) => { fGot.push(ev.message); }, new NewMessage({ incoming: true }));

  const sent = await e.sendFile(frankForEve, { file: JPEG });
  check("photo_sent", sent.media instanceof Api.MessageMediaPhoto, sent.media && sent.media.className);
  await waitFor(() => fGot.length > 0, "Frank to get the photo live");
  const photo = fGot[0].media && fGot[0].media.photo;
  check("photo_received", photo instanceof Api.Photo
    && photo.id.toString() === sent.media.photo.id.toString());
  const bytes = await f.downloadMedia(fGot[0], {});
  const size = largest(photo);
  check("photo_downloaded", Buffer.isBuffer(bytes) && bytes.length === size.size
    && bytes[0] === 0xff && bytes[1] === 0xd8
    && bytes[bytes.length - 2] === 0xff && bytes[bytes.length - 1] === 0xd9,
  { got: bytes && bytes.length, announced: size.size });
  const senders = await e.downloadMedia(sent, {});
  check("photo_same_for_sender", Buffer.compare(senders, bytes) === 0);

  await e.disconnect();
  await f.disconnect();
  console.log("GRAMJS MEDIA OK");
  process.exit(0);
})().catch((err) => {
  console.log("FAILED", err && (err.stack || err.message || err));
  process.exit(1);
});
