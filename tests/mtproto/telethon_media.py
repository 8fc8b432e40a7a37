"""Media messages through a real, unpatched Telethon (tests/integration/mtproto/media.rs).

Alice sends Bob a 300 KB document, a 12 MB one (upload.saveBigFilePart), a JPEG photo and an album
of three photos with `send_file`; Bob downloads each byte for byte with `download_media`; Bob's
second device, offline meanwhile, gets them from getDifference; Carol, who learned the ids, the
access hashes and the file references, cannot download them. Then Alice uploads a profile photo
with photos.uploadProfilePhoto; her user shows it (get_me, Bob's get_entity) and Bob downloads it
with download_profile_photo (inputPeerPhotoFileLocation) and lists it with get_profile_photos.
Prints one `CHECK <name>` line per passed check and `MEDIA OK` at the end; any failure raises (non-
zero exit).

usage: telethon_media.py HTTP_BASE MTPROTO_HOST MTPROTO_PORT PHONE_PREFIX JPEG...
"""

import asyncio
import json
import os
import sys
import tempfile
import urllib.request

from telethon import TelegramClient, errors, events, functions, types
from telethon.crypto import rsa
from telethon.network import ConnectionTcpFull
from telethon.sessions import MemorySession

HTTP, HOST, PORT, PREFIX = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
JPEGS = sys.argv[5:]
CODE = '12345'
TIMEOUT = 60


def check(name, ok, detail=''):
    if not ok:
        raise AssertionError(f'{name} failed {detail}')
    print(f'CHECK {name}', flush=True)


def client(catch_up=False):
    session = MemorySession()
    session.set_dc(2, HOST, PORT)
    return TelegramClient(session, api_id=1, api_hash='0' * 32, catch_up=catch_up,
                          connection=ConnectionTcpFull, receive_updates=True,
                          request_retries=2, connection_retries=2, timeout=TIMEOUT)


async def sign_in(c, phone, first_name):
    await c.connect()
    sent = await c.send_code_request(phone)
    try:
        return await c.sign_in(phone, CODE)
    except errors.PhoneNumberUnoccupiedError:
        await c(functions.auth.SignUpRequest(phone_number=phone,
                                             phone_code_hash=sent.phone_code_hash,
                                             first_name=first_name, last_name=''))
        return await c.sign_in(phone, CODE)


async def wait_for(pred, what):
    for _ in range(TIMEOUT * 10):
        if pred():
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f'timed out waiting for {what}')


def largest_size(photo):
    return max((s for s in photo.sizes if isinstance(s, types.PhotoSize)), key=lambda s: s.size)


async def main():
    info = json.load(urllib.request.urlopen(f'{HTTP}/v1/mtproto/public-key'))
    rsa.add_key(info['pem'], old=False)
    a, b, b2, c = client(), client(), client(catch_up=True), client()
    alice = await sign_in(a, f'+{PREFIX}1', 'Alice')
    bob = await sign_in(b, f'+{PREFIX}2', 'Bob')
    carol = await sign_in(c, f'+{PREFIX}3', 'Carol')
    await b.send_message('me', 'note to self')
    await sign_in(b2, f'+{PREFIX}2', 'Bob')
    b2_seen = []
    b2.add_event_handler(lambda e: b2_seen.append(e.message), events.NewMessage())
    await b2.disconnect()

    bob_in_alice = (await a(functions.contacts.ResolvePhoneRequest(phone=f'+{PREFIX}2'))).users[0]
    alice_in_bob = (await b(functions.contacts.ResolvePhoneRequest(phone=f'+{PREFIX}1'))).users[0]

    # A 300 KB document.
    payload = os.urandom(300 * 1024)
    with tempfile.NamedTemporaryFile(suffix='.bin', delete=False) as f:
        f.write(payload)
        doc_path = f.name
    sent = await a.send_file(bob_in_alice, doc_path, caption='the report', force_document=True)
    check('document_sent', isinstance(sent.media, types.MessageMediaDocument)
          and sent.document.size == len(payload) and sent.message == 'the report', sent)
    check('document_dc', sent.document.dc_id == 2, sent.document.dc_id)
    got = (await b.get_messages(alice_in_bob, limit=1))[0]
    check('document_received', got.document is not None and got.document.id == sent.document.id
          and got.file.name == os.path.basename(doc_path), got)
    data = await b.download_media(got, file=bytes)
    check('document_downloaded', data == payload, (len(data or b''), len(payload)))

    # A 12 MB document: over 10 MB, so Telethon uploads it with upload.saveBigFilePart
    # (inputFileBig, no md5); Bob downloads it byte for byte in 512 KiB getFile pieces.
    big_payload = os.urandom(12 * 1024 * 1024)
    with tempfile.NamedTemporaryFile(suffix='.bin', delete=False) as f:
        f.write(big_payload)
        big_path = f.name
    big_file = await a.upload_file(big_path)
    check('big_document_uploaded_in_big_parts', isinstance(big_file, types.InputFileBig), big_file)
    sent_big = await a.send_file(bob_in_alice, big_file, force_document=True,
                                 attributes=[types.DocumentAttributeFilename('big.bin')])
    check('big_document_sent', sent_big.document is not None
          and sent_big.document.size == len(big_payload), sent_big)
    got_big = (await b.get_messages(alice_in_bob, limit=1))[0]
    data = await b.download_media(got_big, file=bytes)
    check('big_document_downloaded', data == big_payload, (len(data or b''), len(big_payload)))
    os.unlink(big_path)

    # A JPEG photo: the server cuts it into sizes; Bob downloads the largest.
    photo = await a.send_file(bob_in_alice, JPEGS[0], caption='a photo')
    check('photo_sent', isinstance(photo.media, types.MessageMediaPhoto) and photo.photo.dc_id == 2,
          photo)
    got_photo = (await b.get_messages(alice_in_bob, limit=1))[0]
    big = largest_size(got_photo.photo)
    data = await b.download_media(got_photo, file=bytes)
    check('photo_downloaded', data is not None and len(data) == big.size and data[:2] == b'\xff\xd8',
          (len(data or b''), big))
    thumb = await b.download_media(got_photo, file=bytes, thumb=0)
    check('photo_thumb', thumb is not None and len(thumb) > 0)

    # An album: one grouped_id for every item.
    album = await a.send_file(bob_in_alice, JPEGS[1:4], caption=['one', 'two', 'three'])
    groups = {m.grouped_id for m in album}
    check('album_sent', len(album) == 3 and len(groups) == 1 and None not in groups, album)
    got_album = await b.get_messages(alice_in_bob, limit=3)
    check('album_received', {m.grouped_id for m in got_album} == groups
          and sorted(m.message for m in got_album) == ['one', 'three', 'two'], got_album)
    for m in got_album:
        data = await b.download_media(m, file=bytes)
        check('album_item_downloaded', data is not None and len(data) == largest_size(m.photo).size)

    # Carol learned every id, access hash and reference; she can download nothing.
    for m, kind in [(got, 'document'), (got_photo, 'photo')]:
        try:
            await c.download_media(m, file=bytes)
            raise AssertionError(f'carol downloaded the {kind}')
        except errors.RPCError as e:
            # Telethon's named errors do not keep the message: the class is the error.
            check(f'third_account_refused_{kind}', isinstance(e, errors.FileIdInvalidError), e)

    # Bob's second device was offline: getDifference brings every media message.
    await b2.connect()
    await b2.catch_up()
    await wait_for(lambda: sum(1 for m in b2_seen if m.media) >= 6, 'the offline device catching up')
    kinds = [type(m.media).__name__ for m in b2_seen if m.media]
    check('offline_device_difference', kinds.count('MessageMediaPhoto') == 4
          and kinds.count('MessageMediaDocument') == 2, kinds)
    # The 300 KB one, sent first.
    offline_doc = next(m for m in b2_seen if isinstance(m.media, types.MessageMediaDocument))
    data = await b2.download_media(offline_doc, file=bytes)
    check('offline_device_downloaded', data == payload)

    # A profile photo: Alice uploads one; Bob sees it on her user and downloads it by her peer.
    uploaded = await a.upload_file(JPEGS[3])
    result = await a(functions.photos.UploadProfilePhotoRequest(file=uploaded))
    check('profile_photo_uploaded', isinstance(result.photo, types.Photo)
          and result.photo.dc_id == 2, result)
    me = await a.get_me()
    check('profile_photo_on_self', isinstance(me.photo, types.UserProfilePhoto)
          and me.photo.photo_id == result.photo.id, me.photo)
    alice_now = await b.get_entity(types.InputPeerUser(alice_in_bob.id, alice_in_bob.access_hash))
    check('profile_photo_seen', isinstance(alice_now.photo, types.UserProfilePhoto)
          and alice_now.photo.photo_id == result.photo.id and alice_now.photo.dc_id == 2
          and alice_now.photo.stripped_thumb, alice_now.photo)
    data = await b.download_profile_photo(alice_now, file=bytes, download_big=True)
    check('profile_photo_downloaded', data is not None and data[:2] == b'\xff\xd8'
          and len(data) == largest_size(result.photo).size, len(data or b''))
    listed = await b.get_profile_photos(alice_now)
    check('profile_photos_listed', [p.id for p in listed] == [result.photo.id], listed)

    for cl in (a, b, b2, c):
        await cl.disconnect()
    os.unlink(doc_path)
    print('MEDIA OK', flush=True)


asyncio.run(main())
