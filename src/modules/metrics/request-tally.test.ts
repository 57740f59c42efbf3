import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createRequestTally } from './request-tally.ts';

const tally = () =>
  createRequestTally({
    requests: { name: 'test_requests_total', help: 'Requests.' },
    duration: { name: 'test_duration_seconds', help: 'Durations.' },
    buckets: [0.1, 1],
  });

describe('the request tally', () => {
  it('writes a counter per status and a cumulative histogram per method and route, a bound counting what equals it', () => {
    const requests = tally();
    requests.record('GET', '/v1/things/:id', 200, 0.05);
    requests.record('GET', '/v1/things/:id', 200, 0.1);
    requests.record('GET', '/v1/things/:id', 404, 0.5);
    requests.record('GET', '/v1/things/:id', 200, 2);
    requests.record('POST', '/v1/things', 201, 0.25);
    assert.equal(
      requests.render(),
      [
        '# HELP test_requests_total Requests.',
        '# TYPE test_requests_total counter',
        'test_requests_total{method="GET",route="/v1/things/:id",status_code="200"} 3',
        'test_requests_total{method="GET",route="/v1/things/:id",status_code="404"} 1',
        'test_requests_total{method="POST",route="/v1/things",status_code="201"} 1',
        '',
        '# HELP test_duration_seconds Durations.',
        '# TYPE test_duration_seconds histogram',
        'test_duration_seconds_bucket{method="GET",route="/v1/things/:id",le="0.1"} 2',
        'test_duration_seconds_bucket{method="GET",route="/v1/things/:id",le="1"} 3',
        'test_duration_seconds_bucket{method="GET",route="/v1/things/:id",le="+Inf"} 4',
        'test_duration_seconds_sum{method="GET",route="/v1/things/:id"} 2.65',
        'test_duration_seconds_count{method="GET",route="/v1/things/:id"} 4',
        'test_duration_seconds_bucket{method="POST",route="/v1/things",le="0.1"} 0',
        'test_duration_seconds_bucket{method="POST",route="/v1/things",le="1"} 1',
        'test_duration_seconds_bucket{method="POST",route="/v1/things",le="+Inf"} 1',
        'test_duration_seconds_sum{method="POST",route="/v1/things"} 0.25',
        'test_duration_seconds_count{method="POST",route="/v1/things"} 1',
        '',
      ].join('\n'),
    );
  });

  it('escapes what a label value may not hold as it is, and writes the families even before any request', () => {
    const requests = tally();
    assert.equal(
      requests.render(),
      '# HELP test_requests_total Requests.\n# TYPE test_requests_total counter\n\n# HELP test_duration_seconds Durations.\n# TYPE test_duration_seconds histogram\n',
    );
    requests.record('GET', '/a"b\\c\nd', 200, 0);
    assert.ok(requests.render().includes('route="/a\\"b\\\\c\\nd"'));
  });
});
