# Encodes: MCO release-4.12 and release-4.16 pkg/controller/render/render_controller.go
# (syncMachineConfigPool: a pool's MachineConfigs merged into one rendered config; an error from
# syncGeneratedMachineConfig goes to syncFailingStatus, which sets the pool's RenderDegraded
# condition True with the message "Failed to render configuration for pool <pool>: <error>" and
# renders nothing; a sync that renders calls syncAvailableStatus, which sets RenderDegraded False)
# and pkg/controller/node/status.go (calculateStatus: the pool is Degraded when NodeDegraded or
# RenderDegraded is). A config that does not parse as Ignition fails the merge ("could not
# generate rendered MachineConfig: parsing Ignition config failed: …"). Upstream's e2e does the
# same: a bad MachineConfig, the pool Degraded, the MachineConfig deleted, RenderDegraded False.
# The MachineConfig CRD keeps spec.config open (x-kubernetes-preserve-unknown-fields), so the API
# server stores such a config; only the render controller refuses it. A pool whose
# machineConfigSelector selects no MachineConfig fails the same way, before any merge:
# syncMachineConfigPool's `len(mcs) == 0` goes to syncFailingStatus with "no MachineConfigs
# found matching selector <selector>", the selector as apimachinery's labels.Selector prints it
# (`machineconfiguration.openshift.io/role=infra`). A pool whose machineConfigSelector is the
# empty selector (`{}`, which would select every MachineConfig) is not rendered at all: upstream
# records a `SelectingAll` warning event and returns before any render or status. Neither pool
# gets a Degraded condition: the node controller computes a pool's status only once it targets a
# rendered config (node_controller.go syncMachineConfigPool pauses "for the renderer" on an empty
# spec.configuration.name), as release-4.16's own controller showed under these scenarios.
@render
Feature: A MachineConfig the render controller cannot render
  A MachineConfig whose config is not an Ignition config stops its pool's render: no new
  rendered config, every node stays where it is, and the pool says why, Degraded, until the
  MachineConfig is gone.

  Scenario: A config that is not Ignition degrades the pool's render until it is deleted
    Given a fresh cluster with 2 worker nodes
    When a MachineConfig for the worker pool holds a config that is not Ignition
    Then the worker pool's RenderDegraded condition is True with a message that begins "Failed to render configuration for pool worker: "
    And the worker pool's Degraded condition is True
    And the worker pool's NodeDegraded condition is False
    And the worker pool has 1 rendered config
    And every node runs the rendered config it started with
    When the newest MachineConfig for the worker pool is deleted
    Then the worker pool's RenderDegraded condition is False
    And the worker pool's Degraded condition is False
    And the worker pool has 1 rendered config
    And every node runs the rendered config it started with

  Scenario: A pool that selects no MachineConfig says so and renders nothing
    Given a fresh cluster with 1 worker node
    When a pool named infra is created that selects the MachineConfigs labelled machineconfiguration.openshift.io/role=infra
    Then the infra pool's RenderDegraded condition is True with a message that begins "Failed to render configuration for pool infra: no MachineConfigs found matching selector machineconfiguration.openshift.io/role=infra"
    And the infra pool has no Degraded condition
    And the infra pool has 0 rendered configs
    And the worker pool's RenderDegraded condition is False
    And every node runs the rendered config it started with

  Scenario: A pool whose machineConfigSelector is empty is not rendered
    Given a fresh cluster with 1 worker node
    When a pool named infra is created whose machineConfigSelector is empty
    Then the infra pool has 0 rendered configs
    And the infra pool has no Degraded condition
    And the worker pool has 1 rendered config
    And every node runs the rendered config it started with

  # What a fresh cluster's template renders for a CA field the ControllerConfig leaves unset: an
  # empty file, not no file. Upstream's templates write `inline: |` around
  # `{{if .AdditionalTrustBundle}}…{{end}}` (templates/common/_base/files/additional-trust-bundle.yaml,
  # release-4.12, 4.14 and 4.16) and, on 4.12, around `{{if .CloudProviderCAData}}`
  # (cloud-provider-ca.yaml, deleted in 4.14, where the certificate writer writes the cloud CA);
  # render.go:168-171 skips only a template that renders to nothing at all.
  Scenario Outline: The template renders <path> empty while its ControllerConfig field is unset
    Given a fresh cluster with 1 worker node
    Then the newest rendered config of the worker pool has the file <path>
    And every node's <path> is empty
    And every node's <path> is owned by root with mode <mode>

    @ocp-4.12
    Examples:
      | path                                                                  | mode |
      | /etc/pki/ca-trust/source/anchors/openshift-config-user-ca-bundle.crt | 0600 |
      | /etc/kubernetes/static-pod-resources/configmaps/cloud-config/ca-bundle.pem | 0644 |

    @ocp-4.14 @ocp-4.16
    Examples:
      | path                                                                  | mode |
      | /etc/pki/ca-trust/source/anchors/openshift-config-user-ca-bundle.crt | 0600 |
