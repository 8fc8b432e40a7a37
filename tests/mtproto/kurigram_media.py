"""Kurigram (a Pyrogram fork) sends a document over 10 MiB to a ptslog server
(tests/integration/mtproto/kurigram_media.rs): Kurigram uploads such a file with
upload.saveBigFilePart from four workers over its own media session (a second connection on the
same auth key); the recipient gets the message live and downloads it byte for byte.
Prints `CHECK <name>` per passed check and `KURIGRAM MEDIA OK`; any failure raises.

usage: kurigram_media.py HTTP_BASE MTPROTO_HOST MTPROTO_PORT PHONE_PREFIX SIZE
"""

import asyncio
import hashlib
import io
import random
import sys

from pyrogram import filters
from pyrogram.handlers import MessageHandler

import kurigram_common as common

SIZE = int(sys.argv[5])


async def main():
    common.trust_server_key()
    c, d = common.client('carol_media'), common.client('dave_media')
    carol_phone, dave_phone = f'+{common.PREFIX}1', f'+{common.PREFIX}2'
    await common.sign_in(c, carol_phone, 'Carol')
    dave = await common.sign_in(d, dave_phone, 'Dave')
    got = []

    async def on_d(_, m):
        got.append(m)

    d.add_handler(MessageHandler(on_d, filters.incoming))

    data = random.Random(12).randbytes(SIZE)
    f = io.BytesIO(data)
    f.name = 'big.bin'
    await common.resolve(c, dave_phone)
    sent = await c.send_document(dave.id, f, file_name='big.bin', force_document=True)
    common.check('big_document_sent', sent.document is not None
                 and sent.document.file_size == SIZE, sent)
    # A big file goes through the media session, not the main one.
    common.check('media_session_used', len(c.media_sessions) > 0)

    await common.wait_for(lambda: got, 'Dave to get the document live')
    m = got[0]
    common.check('big_document_received', m.document is not None
                 and m.document.file_size == SIZE and m.document.file_name == 'big.bin')
    out = await d.download_media(m, in_memory=True)
    downloaded = bytes(out.getbuffer())
    common.check('big_document_downloaded', hashlib.sha256(downloaded).digest()
                 == hashlib.sha256(data).digest(), f'{len(downloaded)} of {SIZE} bytes')

    for x in (c, d):
        await x.stop() if x.is_initialized else await x.disconnect()
    print('KURIGRAM MEDIA OK', flush=True)


asyncio.run(main())
