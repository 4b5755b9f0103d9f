// Clients that send a request a byte every 2 ms, CONCURRENCY at a time, against a server
// that answers with the method it parsed (server.c here, or any server: the tally shows
// the status lines and bodies that came back).
//
//   node slow-clients.mjs PORT [TOTAL=400] [CONCURRENCY=50]
//
// Against ./server PORT (backlog 10) on Linux: a few per cent come back "OST" or reset;
// ./server PORT 1024: all "POST". `nstat -az TcpExtListenOverflows TcpExtSyncookiesRecv`
// shows the overflows and the SYN cookies that go with them.
import net from 'node:net';

const [port, total, concurrency] = [Number(process.argv[2]), Number(process.argv[3] ?? 400),
                                    Number(process.argv[4] ?? 50)];
const text = 'POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n';

function slowClient() {
  return new Promise((resolve) => {
    const sock = net.connect(port, '127.0.0.1');
    let got = '', i = 0;
    sock.setEncoding('latin1');
    sock.on('data', (d) => { got += d; });
    sock.on('error', (e) => { got += `error ${e.code}`; });
    sock.on('close', () => {
      const [head, body] = got.split('\r\n\r\n');
      resolve(body === undefined ? got : `${head.split('\r\n')[0]} / ${body}`);
    });
    const tick = () => {
      if (i < text.length) {
        sock.write(text[i++]);
        setTimeout(tick, 2);
      }
    };
    sock.on('connect', tick);
  });
}

let next = 0;
const tally = {};
await Promise.all(Array.from({ length: concurrency }, async () => {
  while (next++ < total) {
    const r = await slowClient();
    tally[r] = (tally[r] ?? 0) + 1;
  }
}));
console.log(JSON.stringify(tally));
