/* Paths to the fixture profiles shared by the tests (shaped exactly like the exporter's). */
import * as path from 'path';

export const FIXTURES = path.join(__dirname, '..', '..', 'fixtures');
export const SPEEDSCOPE_FIXTURE = path.join(FIXTURES, 'hotspot.speedscope.json');
export const SUMMARY_FIXTURE = path.join(FIXTURES, 'hotspot.profile.json');
