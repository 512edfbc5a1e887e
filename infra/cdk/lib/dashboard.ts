// The gateway's CloudWatch dashboard (infra/template.yaml `Dashboard`, docs/operations.md): the
// business metrics the functions write as EMF lines (namespace FORGEBENCH_METRICS_NAMESPACE), the
// API's requests and errors, the push queue. An `Fn::Sub` template: `${Namespace}`, `${ApiName}`,
// `${PushQueueName}`, `${DeadLetterQueueName}` are the construct's, `${AWS::Region}` CloudFormation's.
// test/drift.test.ts compares the body (as JSON) with the SAM template's.

const search = (dimensions: string, metric: string, stat: string, id: string, label?: string) => ({
  expression: `SEARCH('{\${Namespace},${dimensions}} MetricName="${metric}"', '${stat}', 300)`,
  id,
  ...(label === undefined ? {} : { label }),
});
const api = (metric: string) => ['AWS/ApiGateway', metric, 'ApiName', '${ApiName}', 'Stage', 'prod'];
const widget = (x: number, y: number, properties: Record<string, unknown>) => ({
  type: 'metric',
  x,
  y,
  width: 12,
  height: 6,
  properties: { title: properties.title, region: '${AWS::Region}', ...properties },
});

const WIDGETS = [
  widget(0, 0, {
    title: 'Tasks',
    stat: 'Sum',
    period: 300,
    metrics: [
      [search('Delivery', 'TasksOpened', 'Sum', 'opened', 'opened')],
      ['${Namespace}', 'TasksClaimed', { label: 'claimed' }],
      [search('Delivery,State', 'TasksAnswered', 'Sum', 'answered', 'answered')],
      ['${Namespace}', 'TasksExpired', { label: 'expired' }],
      ['${Namespace}', 'SweepSkipped', { label: 'left by sweeps', yAxis: 'right' }],
      ['${Namespace}', 'ItemsSkipped', { label: 'items left out of pages', yAxis: 'right' }],
    ],
  }),
  widget(12, 0, { title: 'Refusals by reason', metrics: [[search('Reason', 'Refusals', 'Sum', 'refusals')]] }),
  widget(0, 6, {
    title: 'Push attempts: latency by outcome (p50, p99)',
    metrics: [
      [search('Outcome', 'PushAttemptLatency', 'p50', 'p50')],
      [search('Outcome', 'PushAttemptLatency', 'p99', 'p99')],
      ['${Namespace}', 'PushFailures', { stat: 'Sum', yAxis: 'right', label: 'failed tasks' }],
    ],
  }),
  widget(12, 6, { title: 'Long-poll waits (seconds, p50)', metrics: [[search('Route', 'LongPollWait', 'p50', 'waits')]] }),
  widget(0, 12, { title: 'API requests and errors', stat: 'Sum', period: 300, metrics: [api('Count'), api('4XXError'), api('5XXError')] }),
  widget(12, 12, {
    title: 'Push queue',
    stat: 'Maximum',
    period: 300,
    metrics: [
      ['AWS/SQS', 'ApproximateAgeOfOldestMessage', 'QueueName', '${PushQueueName}'],
      ['AWS/SQS', 'ApproximateNumberOfMessagesVisible', 'QueueName', '${DeadLetterQueueName}', { yAxis: 'right', label: 'dead letters' }],
    ],
  }),
];

/** The dashboard body as an `Fn::Sub` template (see the top of this file for its variables). */
export const DASHBOARD_BODY = JSON.stringify({ widgets: WIDGETS });
