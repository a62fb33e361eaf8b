// Creates a DID with ion-sdk, the client library of ION, and posts it to anchord.
// Usage: node first-did.mjs [anchord base URL, default http://127.0.0.1:8080]
// Prints the new DID; its keys go to keys-<DID suffix>.json in the current directory.
import { writeFile } from 'node:fs/promises';
import { IonKey, IonRequest } from '@decentralized-identity/ion-sdk';

const base = process.argv[2] ?? 'http://127.0.0.1:8080';
const [recoveryKey, recoveryPrivateKey] = await IonKey.generateEs256kOperationKeyPair();
const [updateKey, updatePrivateKey] = await IonKey.generateEs256kOperationKeyPair();
const [signingKey, signingPrivateKey] = await IonKey.generateEs256kDidDocumentKeyPair({ id: 'key-1' });
const document = {
  publicKeys: [signingKey],
  services: [{ id: 'home', type: 'LinkedDomains', serviceEndpoint: 'https://example.com/' }],
};
const request = await IonRequest.createCreateRequest({ recoveryKey, updateKey, document });
const response = await fetch(`${base}/sidetree/v1/operations`, {
  method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(request),
});
const body = await response.json().catch(() => ({}));
if (!response.ok) {
  console.error(`anchord answered ${response.status}: ${body.code}: ${body.message}`);
  process.exit(1);
}
const did = body.didDocument.id;
// The private keys are the only way to update, recover or deactivate the DID: keep them.
await writeFile(`keys-${did.split(':').pop()}.json`,
  JSON.stringify({ did, recoveryPrivateKey, updatePrivateKey, signingPrivateKey }, null, 2), { mode: 0o600 });
console.log(did);
