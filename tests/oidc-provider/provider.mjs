// A real OpenID Connect provider for the tests (oauth2-mock-server): discovery, a JWKS with an
// RS256, an ES256 and an EdDSA key, and the client-credentials grant. Its token endpoint signs
// with each key in turn; a client-credentials token's subject is the client's id (as providers
// that issue tokens to workloads do).
//
// For the refusal tests it also signs tokens that a provider would never issue, at POST
// /test/token {kid?, claims?, drop?, expires_in?, forge?}: claims changed or dropped, an
// unpublished key, `alg: none`, or HS256 keyed with the RSA key's public half. POST /test/keys
// {alg, kid} adds a key to the JWKS, as a provider rotating its keys does.
//
// Prints one line, {"issuer": "http://127.0.0.1:PORT"}, once it listens; ends with its stdin.
import { OAuth2Server } from 'oauth2-mock-server';
import { SignJWT, exportSPKI, generateKeyPair, importJWK } from 'jose';

const server = new OAuth2Server();
await server.issuer.keys.generate('RS256', { kid: 'rs' });
await server.issuer.keys.generate('ES256', { kid: 'es' });
await server.issuer.keys.generate('EdDSA', { kid: 'ed', crv: 'Ed25519' });
const unpublished = await generateKeyPair('ES256');

function clientIdOf(req) {
  const basic = /^Basic (.+)$/.exec(req.headers.authorization ?? '');
  if (basic) {
    return Buffer.from(basic[1], 'base64').toString().split(':')[0];
  }
  return req.body?.client_id;
}

server.service.on('beforeTokenSigning', (token, req) => {
  const client = clientIdOf(req);
  if (client) {
    token.payload.sub = client;
  }
});

function encode(value) {
  return Buffer.from(JSON.stringify(value)).toString('base64url');
}

async function forged(forge, payload) {
  if (forge === 'unpublished-key') {
    return new SignJWT(payload)
      .setProtectedHeader({ alg: 'ES256', kid: 'unpublished', typ: 'JWT' })
      .sign(unpublished.privateKey);
  }
  if (forge === 'none') {
    return `${encode({ alg: 'none', typ: 'JWT' })}.${encode(payload)}.`;
  }
  if (forge === 'hs256-public-key') {
    const rsa = server.issuer.keys.get('rs');
    const publicPem = await exportSPKI(await importJWK({ ...rsa, d: undefined, p: undefined,
      q: undefined, dp: undefined, dq: undefined, qi: undefined }, 'RS256'));
    return new SignJWT(payload)
      .setProtectedHeader({ alg: 'HS256', kid: 'rs', typ: 'JWT' })
      .sign(new TextEncoder().encode(publicPem));
  }
  throw new Error(`unknown forgery ${forge}`);
}

// A key added to the JWKS, as a provider rotating its keys does: POST /test/keys {alg, kid}.
server.service.requestHandler.post('/test/keys', async (req, res) => {
  const { alg, kid } = req.body ?? {};
  await server.issuer.keys.generate(alg, alg === 'EdDSA' ? { kid, crv: 'Ed25519' } : { kid });
  res.json({ kid });
});

server.service.requestHandler.post('/test/token', async (req, res) => {
  try {
    const { kid, claims = {}, drop = [], expires_in: expiresIn, forge } = req.body ?? {};
    const shape = (_header, payload) => {
      Object.assign(payload, claims);
      for (const name of drop) {
        delete payload[name];
      }
    };
    let token;
    if (forge) {
      const now = Math.floor(Date.now() / 1000);
      const payload = { iss: server.issuer.url, iat: now, exp: now + 600 };
      shape({}, payload);
      token = await forged(forge, payload);
    } else {
      token = await server.issuer.buildToken({ kid, scopesOrTransform: shape, expiresIn });
    }
    res.json({ token });
  } catch (error) {
    res.status(400).json({ error: String(error) });
  }
});

await server.start(0, '127.0.0.1');
console.log(JSON.stringify({ issuer: server.issuer.url }));
process.stdin.resume();
process.stdin.on('end', async () => {
  await server.stop();
  process.exit(0);
});
